/**
 * D29 retention in MongoDB: finalized runs (their event logs live in the record) created before
 * a cutoff are removed, with their idempotency keys and webhook deliveries. Ledger entries stay:
 * the money history of an account is not user data and must keep explaining its balance. Runs
 * that never finalized are left alone (a live run is never removed under its reader).
 */
import type { Collections } from './db';
import { deleteAll } from './delete-all';

/** Runs removed per round: bounded memory and bounded `$in` lists, whatever the backlog. */
const BATCH = 500;

export interface RemovedRuns {
  runs: number;
  idempotencyKeys: number;
  webhookDeliveries: number;
}

/** What retention removes runs from. */
export type RetentionCollections = Pick<
  Collections,
  'runs' | 'runChunks' | 'itemBlocks' | 'itemUsage' | 'idempotencyKeys' | 'webhookDeliveries'
>;

/** Removes finalized runs created before `cutoff` and what belongs to them; `onBatch` is called between rounds. */
export async function removeRunsOlderThan(
  c: RetentionCollections,
  cutoff: Date,
  onBatch: () => void = () => undefined,
): Promise<RemovedRuns> {
  const removed: RemovedRuns = { runs: 0, idempotencyKeys: 0, webhookDeliveries: 0 };
  for (;;) {
    const batch = await c.runs
      .find({ created_at: { $lt: cutoff }, finalized: true }, { projection: { _id: 1 } })
      .limit(BATCH)
      .toArray();
    if (batch.length === 0) break;
    const ids = batch.map((d) => d._id);
    // Keys before runs: a key left pointing at a removed run would let a repeat start that run id again (D18).
    removed.idempotencyKeys += await deleteAll(c.idempotencyKeys, { run_id: { $in: ids } });
    removed.webhookDeliveries += await deleteAll(c.webhookDeliveries, { run_id: { $in: ids } });
    const runs = (await c.runs.deleteMany({ _id: { $in: ids }, finalized: true })).deletedCount;
    // After the record: a record must never be readable without its chunks (domain/run-chunks.ts).
    // In slices (deleteAll): 500 big runs hold millions of pages, past what one FerretDB delete takes.
    await deleteAll(c.runChunks, { run_id: { $in: ids } });
    await deleteAll(c.itemBlocks, { run_id: { $in: ids } });
    await deleteAll(c.itemUsage, { run_id: { $in: ids } });
    removed.runs += runs;
    onBatch();
    if (runs === 0) break; // nothing matched after all (removed by a concurrent job): do not spin
  }
  // Whatever else is that old: keys of runs never recorded (D18 crash cases), deliveries of runs removed earlier.
  removed.idempotencyKeys += await deleteAll(c.idempotencyKeys, { created_at: { $lt: cutoff } });
  removed.webhookDeliveries += await deleteAll(c.webhookDeliveries, {
    created_at: { $lt: cutoff },
  });
  // Chunks whose record went in an earlier round that died before removing them.
  await deleteAll(c.runChunks, { created_at: { $lt: cutoff } });
  await deleteAll(c.itemBlocks, { created_at: { $lt: cutoff } });
  await deleteAll(c.itemUsage, { created_at: { $lt: cutoff } });
  return removed;
}
