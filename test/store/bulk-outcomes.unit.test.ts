/**
 * store/bulk-outcomes.ts on its own: a bulk command's per-operation error report becomes each
 * operation's outcome; anything else (a dropped connection, a write concern error) fails them all.
 */
import assert from 'node:assert/strict';
import { bulkOutcomes, OperationError, splitFailure } from '../../store/bulk-outcomes';
import { isDuplicateKey } from '../../store/ledger';

/** What the driver's MongoBulkWriteError carries (the fields bulk-outcomes reads). */
function bulkError(
  writeErrors: Array<{ index: number; code: number; errmsg: string }>,
  writeConcernError?: object,
) {
  return Object.assign(new Error('bulk write failed'), {
    writeErrors,
    result: { getWriteConcernError: () => writeConcernError },
  });
}

describe('bulk outcomes (unordered bulk commands)', () => {
  it('answers ok for every operation of a command that succeeded', async () => {
    const outcomes = await bulkOutcomes(3, async () => ({ acknowledged: true }));
    assert.deepEqual(
      outcomes.map((o) => o.ok),
      [true, true, true],
    );
  });

  it('fails only the operations the server reported, each with its own code', async () => {
    const err = bulkError([
      { index: 1, code: 11000, errmsg: 'E11000 duplicate key error' },
      { index: 3, code: 2, errmsg: 'bad value' },
    ]);
    const outcomes = await bulkOutcomes(4, () => Promise.reject(err));
    assert.deepEqual(
      outcomes.map((o) => o.ok),
      [true, false, true, false],
    );
    const duplicate = outcomes[1] as { ok: false; error: OperationError };
    assert.ok(isDuplicateKey(duplicate.error), 'a duplicate stays recognizable as one');
    assert.equal(duplicate.error.message, 'E11000 duplicate key error');
    const other = outcomes[3] as { ok: false; error: OperationError };
    assert.equal(other.error.code, 2);
    assert.equal(isDuplicateKey(other.error), false);
  });

  it('a single reported error (not a list) is split the same way', () => {
    const err = Object.assign(new Error('x'), {
      writeErrors: { index: 0, code: 11000, errmsg: 'dup' },
    });
    assert.deepEqual(
      splitFailure(2, err).map((o) => o.ok),
      [false, true],
    );
  });

  it('throws the error itself when the command failed as a whole', async () => {
    const dropped = Object.assign(new Error('connection closed'), { writeErrors: [] });
    await assert.rejects(
      bulkOutcomes(2, () => Promise.reject(dropped)),
      (e) => e === dropped,
    );
    const plain = new Error('timeout');
    assert.throws(
      () => splitFailure(2, plain),
      (e) => e === plain,
    );
  });

  it('throws when a write concern error comes with the report (durability unknown for all)', () => {
    const err = bulkError([{ index: 0, code: 11000, errmsg: 'dup' }], { code: 64 });
    assert.throws(
      () => splitFailure(2, err),
      (e) => e === err,
    );
  });

  it('throws when the report names an operation the command did not have', () => {
    const err = bulkError([{ index: 5, code: 11000, errmsg: 'dup' }]);
    assert.throws(
      () => splitFailure(2, err),
      (e) => e === err,
    );
  });
});
