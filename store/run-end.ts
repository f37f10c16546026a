/**
 * The end of a run and its one debit, whoever writes them: the workflow's finalizeRun activity
 * (nearly always), or the API settling a run whose workflow Temporal closed without letting it
 * finish (terminated from outside, api/runs/settle-run.ts). The end whose debit is booked
 * first is the run's one end: a retry writes the same end again and changes nothing; the same
 * end computed anew by a later workflow task (same status and cost, another time) writes the
 * record with the booked time if none is written; a second, different end (a workflow reset by an
 * operator re-running the run, a settle racing a finalize) is dropped, so the record and the debit
 * agree once every attempt is done. Every step is idempotent.
 *
 * The same entry gives back the credit held for the run at its start (D17, `released_usd`: as
 * the workflow was started with it, RunFinal.holdUsd, the same value the API wrote on the record;
 * else read from the record), so a hold is released exactly once, whichever end books the entry;
 * a run that cost nothing but held credit books an entry of amount 0 for it.
 */
import type { RunFinal } from '../domain/run';
import type { RunChunk } from '../domain/run-chunks';
import type { Collections } from './db';
import { deriveId } from './ids';
import { postEntry } from './ledger';
import { finalizeRunRecord, finalizeRunRecordOnce, saveRunChunk } from './runs';
import type { RunWrites } from './run-writes';

/** Who writes the end: the workflow's finalize, or the API settling a run Temporal closed. */
export type RunEndWriter = 'finalize' | 'settle';

/**
 * Writes the final record and books the run's one debit (D17); true when this call wrote the
 * record. With `writes` (the worker's group commit, store/run-writes.ts) the debit and the record
 * of the usual end go out batched with other runs' ends; true then means this call booked the
 * debit and wrote the record after it (the batched update does not tell whether the record was
 * already so, but a record is written only after its debit, so the call that booked it is the
 * first to write it). A retry that finds its debit booked writes alone, as before.
 */
export async function recordRunEnd(
  c: Pick<Collections, 'runs' | 'ledger'>,
  final: RunFinal,
  writer: RunEndWriter = 'finalize',
  writes?: RunWrites,
): Promise<boolean> {
  // Nothing else updates a run record (the API only inserts it), so no write needs a read-back:
  // FerretDB loses an update only to a concurrent update of the same document.
  // The hold the workflow was started with (the record's, passed along: no read); else the record's.
  const hold = final.holdUsd ?? (await holdOf(c, final.runId));
  // No debit to decide by (a free run that held nothing): the record's guard keeps the first end.
  if (final.totalCost <= 0 && hold <= 0) return finalizeRunRecordOnce(c, final);
  // The debit first, always: its id is the run's, so booking it decides which end is the run's, and
  // a record is never final without its debit (a settle that wrote the record first and then failed
  // to book left a run no read settles again, unbilled). The usual end then writes the record by
  // `_id` alone, the cheapest write on every store (store/runs.ts); the API's rare settle keeps the
  // record's guard.
  const write = writer === 'settle' ? finalizeRunRecordOnce : finalizeRunRecord;
  if (writes && writer === 'finalize') {
    if (await writes.postEntry(debitOf(final, hold))) {
      await writes.finalizeRunRecord(final);
      return true;
    }
  } else if (await postEntry(c, debitOf(final, hold))) return write(c, final);
  // Booked already: by an earlier attempt of this end (which may have died before the record), or by another end.
  const bookedAtMs = await bookedEndTime(c, final);
  if (bookedAtMs === undefined) return false;
  if (bookedAtMs === final.completedAtMs) return write(c, final);
  // The same end computed again by a later workflow task: a local activity's input is not in the
  // history, so a task that died after the debit leaves the next one to end the run anew, at its
  // own time. The record takes the booked time (record and debit agree) unless one was written.
  return finalizeRunRecordOnce(c, { ...final, completedAtMs: bookedAtMs });
}

/** The credit held for the run at its start (0: none, or a run started before holds existed). */
async function holdOf(c: Pick<Collections, 'runs'>, runId: string): Promise<number> {
  const doc = await c.runs.findOne({ _id: runId }, { projection: { hold_usd: 1 } });
  return doc?.hold_usd ?? 0;
}

/** The run's one debit (D17): its id derives from the run's, so it exists once however often it is posted. */
function debitOf(final: RunFinal, hold: number) {
  return {
    _id: deriveId('led', final.runId),
    account_id: final.accountId,
    kind: 'run' as const,
    run_id: final.runId,
    amount_usd: final.totalCost > 0 ? -final.totalCost : 0,
    note: `run ${final.status}`,
    run_ended_at: new Date(final.completedAtMs),
    ...(hold > 0 ? { released_usd: hold } : {}),
  };
}

/**
 * When the debit booked for the run is this end's (same status and cost: an earlier attempt of it
 * died before the record), the end time it was booked with; undefined for another end's.
 */
async function bookedEndTime(
  c: Pick<Collections, 'ledger'>,
  final: RunFinal,
): Promise<number | undefined> {
  const entry = await c.ledger.findOne(
    { _id: deriveId('led', final.runId) },
    { projection: { run_ended_at: 1, amount_usd: 1, note: 1 } },
  );
  const debit = debitOf(final, 0);
  if (!entry?.run_ended_at || entry.amount_usd !== debit.amount_usd || entry.note !== debit.note)
    return undefined;
  return entry.run_ended_at.getTime();
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
