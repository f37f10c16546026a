/**
 * D39: erasing a run (store/erase-run.ts) and retention (store/retention.ts) find what a run left
 * by its id in six collections. On MongoDB each such read must have an index that starts with the
 * run id, or every delete of a run scans the whole collection, every account's documents. (The
 * embedded FerretDB scans anyway: it pushes down `_id` alone.)
 */
import assert from 'node:assert/strict';
import { filesCollection } from '../../store/files';
import { useTestStore } from '../support/store';

describe('store: what a run leaves is found by an index on its id (D39)', function () {
  this.timeout(60_000);
  const ctx = useTestStore();

  it('has an index led by the run id on every collection a run is erased from', async () => {
    const { collections: c, db } = ctx.store;
    const byRun = [
      [c.idempotencyKeys, 'run_id'],
      [c.webhookDeliveries, 'run_id'],
      [c.runChunks, 'run_id'],
      [c.itemBlocks, 'run_id'],
      [c.itemUsage, 'run_id'],
      [filesCollection(db), 'metadata.run_id'],
    ] as const;
    for (const [collection, field] of byRun) {
      const leads = (await collection.listIndexes().toArray()).map((i) => Object.keys(i.key)[0]);
      assert.ok(leads.includes(field), `${collection.collectionName}: no index on ${field}`);
    }
  });
});
