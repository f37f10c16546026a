/**
 * The store's deletes past what one FerretDB delete takes: it deletes with one SQL `IN (...)` of
 * every matching id, and SQLite refuses more than 32,766 of them. D29 retention of big runs, the
 * sweep of expired windows and keys (D16, D18) and a workflow's versions (D26) each failed for
 * good past it (retention every hour, keeping every other tenant's expired files and stray holds
 * with it); they delete in slices now (store/delete-all.ts).
 */
import assert from 'node:assert/strict';
import type { Collection, Document } from 'mongodb';
import { createRetentionActivity } from '../../activities/retention';
import { sweepExpired } from '../../store/expiry';
import { generateId } from '../../store/ids';
import { removeRunsOlderThan } from '../../store/retention';
import { insertRun } from '../../store/runs';
import { deleteWorkflowVersions } from '../../store/workflows';
import { pendingRun, useTestStore } from '../support/store';

/** One more document than one FerretDB delete takes. */
const PAST_ONE_DELETE = 32_767;
const DAY_MS = 86_400_000;

/** Inserts `count` documents made by `doc`, in batches. */
async function insertMany(
  collection: Collection<any>,
  count: number,
  doc: (i: number) => Document,
): Promise<void> {
  for (let i = 0; i < count; i += 8_000)
    await collection.insertMany(
      Array.from({ length: Math.min(8_000, count - i) }, (_, j) => doc(i + j)),
    );
}

describe('store: deletes past one FerretDB delete (32,766 documents)', function () {
  this.timeout(180_000);
  const db = useTestStore();

  it('retention removes old big runs and all their pages, and its other sweeps run when it fails', async () => {
    const c = db.store.collections;
    const created = new Date(Date.now() - 40 * DAY_MS);
    const runIds = [generateId('run'), generateId('run')];
    for (const _id of runIds)
      await insertRun(c, {
        ...pendingRun({ _id, account_id: 'acc_old', key_id: 'key_old' }),
        status: 'completed',
        finalized: true,
        created_at: created,
      });
    const half = Math.ceil(PAST_ONE_DELETE / 2);
    await insertMany(c.itemBlocks, 2 * half, (i) => ({
      _id: `${runIds[i % 2]}:n:${i}`,
      run_id: runIds[i % 2],
      node_id: 'n',
      page: i,
      created_at: created,
    }));
    const removed = await removeRunsOlderThan(c, new Date(Date.now() - 30 * DAY_MS));
    assert.equal(removed.runs, 2);
    assert.equal(await c.itemBlocks.countDocuments({}), 0, 'every page removed');

    // A failing step does not stop the next: the stray holds are swept, then the failure thrown.
    const failure = new Error('the runs cannot be read');
    let swept = false;
    const collections = {
      ...c,
      runs: {
        find: () => {
          throw failure;
        },
      },
      creditHolds: new Proxy(c.creditHolds, {
        get: (target, name, receiver) => {
          swept = true;
          return Reflect.get(target, name, receiver);
        },
      }),
    } as unknown as typeof c;
    const applyRetention = createRetentionActivity({ collections, config: {} });
    await assert.rejects(applyRetention(), failure);
    assert.ok(swept, 'the holds were swept after the runs failed');
  });

  it('sweeps more expired windows than one delete takes', async () => {
    const c = db.store.collections;
    const expired = new Date(Date.now() - 60_000);
    await insertMany(c.rateLimits, PAST_ONE_DELETE, (i) => ({
      _id: `key_many:requests:${i}`,
      count: 1,
      expires_at: expired,
    }));
    await sweepExpired([c.rateLimits]);
    assert.equal(await c.rateLimits.countDocuments({}), 0);
  });

  it('deletes a workflow of more versions than one delete takes', async () => {
    const c = db.store.collections;
    const workflowId = generateId('wf');
    await c.workflows.insertOne({ _id: workflowId } as never);
    await insertMany(c.workflowVersions, PAST_ONE_DELETE, (i) => ({
      _id: `${workflowId}-v${i}`,
      workflow_id: workflowId,
    }));
    assert.equal(await deleteWorkflowVersions(c, workflowId), true);
    assert.equal(await c.workflowVersions.countDocuments({ workflow_id: workflowId }), 0);
  });
});
