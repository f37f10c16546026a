/** toApiError: a database that refuses a write for now is 503 (retry later), not 500 (issue 8, load test). */
import assert from 'node:assert/strict';
import { MongoServerError } from 'mongodb';
import { isDatabaseBusy, toApiError } from '../../../api/middleware/error-handler';

const serverError = (fields: Record<string, unknown>) =>
  new MongoServerError({ message: 'x', ...fields } as any);

describe('toApiError: transient database refusals', () => {
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
      const api = toApiError(err);
      assert.equal(api.status, 503);
      assert.equal(api.code, 'service_unavailable');
    }
  });

  it('leaves other server errors as 500', () => {
    const err = serverError({ code: 2, codeName: 'BadValue', message: 'bad value' });
    assert.equal(isDatabaseBusy(err), false);
    assert.equal(toApiError(err).status, 500);
    assert.equal(
      toApiError(new Error('database is locked')).status,
      500,
      'only a server error of the driver counts',
    );
  });
});
