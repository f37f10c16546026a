/**
 * The housekeeping's pass over runs recorded and never started (store/never-started.ts), on the
 * real store: it asks about every `pending` record past 15 minutes, so live runs ahead of a
 * never-started one do not hide it (a pass that stopped at the first thousand did), and it
 * settles only the one whose workflow is missing.
 */
import assert from 'node:assert/strict';
import { generateId } from '../../store/ids';
import { NEVER_STARTED_AFTER_MS, settleUnstartedRuns } from '../../store/never-started';
import { insertRuns } from '../../store/runs';
import { pendingRun, useTestStore } from '../support/store';

describe('settling runs that never started (store)', function () {
  this.timeout(120_000);
  const db = useTestStore();

  it('settles a never-started run behind 1,000 older live ones, and only it', async () => {
    const c = db.store.collections;
    const now = Date.now();
    const account = generateId('acct');
    const record = (ageMs: number) =>
      pendingRun({
        _id: generateId('run'),
        account_id: account,
        key_id: 'key_1',
        created_at: new Date(now - ageMs),
      });
    const live = Array.from({ length: 1_000 }, (_, i) =>
      record(NEVER_STARTED_AFTER_MS + 3_600_000 - i),
    );
    await insertRuns(c, live);
    const orphan = record(NEVER_STARTED_AFTER_MS + 60_000);
    const young = record(60_000);
    await insertRuns(c, [orphan, young]);

    const asked = new Set<string>();
    const settled = await settleUnstartedRuns(
      c,
      async (runId) => {
        asked.add(runId);
        return runId !== orphan._id;
      },
      now,
    );
    assert.equal(settled, 1);
    assert.equal((await c.runs.findOne({ _id: orphan._id }))?.status, 'failed');
    assert.ok(!asked.has(young._id), 'a record younger than 15 minutes is not asked about');
    for (const run of live.slice(0, 3))
      assert.equal((await c.runs.findOne({ _id: run._id }))?.status, 'pending');
  });
});
