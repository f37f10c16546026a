/** The last step of every run: its record and its debit, each written exactly once (D17, issue 2 item 7). */
import type { Collections } from '../store/db';
import { finalizeRunRecord, saveRunChunk as saveRunChunkDoc } from '../store/runs';
import { postEntry } from '../store/ledger';
import { deriveId } from '../store/ids';
import type { RunFinal } from '../workflows/definitions';
import type { RunChunk } from '../workflows/run-chunks';
import { runsEnded } from '../metrics';

/** Builds the activity that persists a run's end; every step is idempotent, so Temporal may retry it freely. */
export function createFinalizeActivity(deps: { collections: Collections }) {
  return async function finalizeRun(final: RunFinal): Promise<void> {
    // Counted by the attempt that wrote the record, so a retried finalize is not counted twice.
    if (await finalizeRunRecord(deps.collections, final)) runsEnded.inc({ status: final.status });
    // Read it back: an update FerretDB lost to a concurrent write must not close the run without
    // its record. Throwing makes Temporal retry this activity, which writes it again.
    const stored = await deps.collections.runs.findOne({ _id: final.runId }, { projection: { finalized: 1 } });
    if (stored && !stored.finalized) throw new Error(`the final record of ${final.runId} did not stick; retrying`);
    if (final.totalCost > 0) {
      await postEntry(deps.collections, {
        _id: deriveId('led', final.runId), // one debit per run, whatever retries happen
        account_id: final.accountId,
        kind: 'run',
        run_id: final.runId,
        amount_usd: -final.totalCost,
        note: `run ${final.status}`,
      });
    }
  };
}

/** Builds the activity that stores one chunk of a large run's end before finalizeRun (workflows/run-chunks.ts). */
export function createSaveRunChunkActivity(deps: { collections: Collections }) {
  return async function saveRunChunk(chunk: RunChunk): Promise<void> {
    await saveRunChunkDoc(deps.collections, chunk);
  };
}
