/** store/run-search.ts: a page of the run list reads neither a run's inputs nor its event log. */
import assert from 'node:assert/strict';
import { generateId } from '../../store/ids';
import { insertRun } from '../../store/runs';
import { searchRuns } from '../../store/run-search';
import { pendingRun, useTestStore } from '../support/store';

describe('store: run search (the run list)', function () {
  this.timeout(30_000);
  const db = useTestStore();

  it("leaves out each run's inputs and event log: a page of big runs' rows is not read", async () => {
    const accountId = generateId('acct');
    // ~1 MB of rows, as a big run's JSON body may hold (D35).
    const rows = Array.from({ length: 5_000 }, (_, i) => `row ${i} `.repeat(25));
    await insertRun(
      db.store.collections,
      pendingRun({
        _id: generateId('run'),
        account_id: accountId,
        key_id: 'key_x',
        inputs: { rows },
      }),
    );
    const [found, ...rest] = await searchRuns(db.store.collections, { accountId, limit: 10 });
    assert.equal(rest.length, 0);
    assert.deepEqual(
      ['inputs_json', 'inputs', 'events_json'].filter((field) => field in found),
      [],
      'neither inputs nor the log are read',
    );
  });
});
