/**
 * The end of a run and its one debit, whoever writes them: the workflow's finalizeRun activity
 * (nearly always), or the API settling a run whose workflow Temporal closed without letting it
 * finish (terminated from outside, api/services/settle-run.ts), which never writes over a
 * finalized record. Every step is idempotent.
 */
import type { RunFinal } from '../domain/run';
import type { RunChunk } from '../domain/run-chunks';
import type { Collections } from './db';
import { deriveId } from './ids';
import { postEntry } from './ledger';
import { finalizeRunRecord, saveRunChunk, settleRunRecord } from './runs';

/** Who writes the end: the workflow's finalize, or the API settling a run Temporal closed (store/runs.ts). */
export type RunEndWriter = 'finalize' | 'settle';

/** Writes the final record and books the run's one debit (D17); true when this call wrote the record. */
export async function recordRunEnd(
  c: Pick<Collections, 'runs' | 'ledger'>,
  final: RunFinal,
  writer: RunEndWriter = 'finalize',
): Promise<boolean> {
  // Nothing else updates a run record (the API only inserts it), so the write needs no read-back:
  // FerretDB loses an update only to a concurrent update of the same document.
  const wrote = await (writer === 'finalize' ? finalizeRunRecord : settleRunRecord)(c, final);
  if (final.totalCost > 0) {
    await postEntry(c, {
      _id: deriveId('led', final.runId), // one debit per run, whatever retries happen
      account_id: final.accountId,
      kind: 'run',
      run_id: final.runId,
      amount_usd: -final.totalCost,
      note: `run ${final.status}`,
    });
  }
  return wrote;
}

/** A big run's chunks first, then the record that says how many there are (a record is never readable without its chunks). */
export async function recordChunkedRunEnd(
  c: Pick<Collections, 'runs' | 'runChunks' | 'ledger'>,
  final: RunFinal,
  chunks: readonly RunChunk[],
  writer: RunEndWriter,
): Promise<boolean> {
  for (const chunk of chunks) await saveRunChunk(c, chunk);
  return recordRunEnd(c, final, writer);
}
