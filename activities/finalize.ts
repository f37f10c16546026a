/** The last step of every run: its record and its debit, each written exactly once (D17). */
import type { Collections } from '../store/db';
import { recordRunEnd } from '../store/run-end';
import { RunWrites } from '../store/run-writes';
import { saveRunChunk as saveRunChunkDoc } from '../store/runs';
import type { RunFinal } from '../domain/run';
import type { RunChunk } from '../domain/run-chunks';
import { observeRunEnd, observeRunUsage } from '../lib/metrics';

/**
 * Builds the activity that persists a run's end; every step is idempotent, so Temporal may retry
 * it freely. The worker's ends are group-committed (store/run-writes.ts): the debits and records
 * of runs ending together go to the store as one command each.
 */
export function createFinalizeActivity(deps: { collections: Collections; writes?: RunWrites }) {
  const writes = deps.writes ?? new RunWrites(deps.collections);
  return async function finalizeRun(final: RunFinal): Promise<void> {
    // Counted by the attempt that wrote the record, so a retried finalize is not counted twice.
    if (await recordRunEnd(deps.collections, final, 'finalize', writes)) {
      observeRunEnd(final.runId, final.accountId, final.status, final.completedAtMs);
      observeRunUsage(final.accountId, final.usage, final.totalCost); // D36
    }
  };
}

/** Builds the activity that stores one chunk of a large run's end before finalizeRun (domain/run-chunks.ts). */
export function createSaveRunChunkActivity(deps: { collections: Collections }) {
  return async function saveRunChunk(chunk: RunChunk): Promise<void> {
    await saveRunChunkDoc(deps.collections, chunk);
  };
}
