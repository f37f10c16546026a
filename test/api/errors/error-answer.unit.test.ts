/** errorAnswer: a database that refuses a write for now is 503 (retry later), not 500 (found by the load test). */
import assert from 'node:assert/strict';
import { MongoServerError } from 'mongodb';
import { errorAnswer, isDatabaseBusy } from '../../../api/errors/error-answer';

const serverError = (fields: Record<string, unknown>) =>
  new MongoServerError({ message: 'x', ...fields } as any);

describe('errorAnswer: transient database refusals', () => {
  it("maps FerretDB's SQLite writer lock and MongoDB's transient lock errors to 503", () => {
    for (const err of [
      serverError({
        code: 1,
        message: 'database is locked (5) (SQLITE_BUSY)',
        errmsg: 'database is locked (5) (SQLITE_BUSY)',
      }),
      serverError({ code: 112, codeName: 'WriteConflict' }),
      serverError({ code: 24, codeName: 'LockTimeout' }),
    ]) {
      assert.equal(isDatabaseBusy(err), true, err.message);
      const api = errorAnswer(err);
      assert.equal(api.status, 503);
      assert.equal(api.error.code, 'service_unavailable');
    }
  });

  it('leaves other server errors as 500', () => {
    const err = serverError({ code: 2, codeName: 'BadValue', message: 'bad value' });
    assert.equal(isDatabaseBusy(err), false);
    assert.equal(errorAnswer(err).status, 500);
    assert.equal(
      errorAnswer(new Error('database is locked')).status,
      500,
      'only a server error of the driver counts',
    );
  });
});
