/** Run records: created by the API, finalized exactly once by the workflow's last activity. */
import type { RunFinal } from '../workflows/definitions';
import type { Collections } from './db';
import type { RunDoc } from './documents';

/** Stores a new run as `pending` (D7) before its workflow starts. */
export async function insertRun(c: Pick<Collections, 'runs'>, run: RunDoc): Promise<void> {
  await c.runs.insertOne(run);
}

/** The caller's run, or null: another account's run is indistinguishable from a missing one. */
export function findRun(c: Pick<Collections, 'runs'>, accountId: string, runId: string): Promise<RunDoc | null> {
  return c.runs.findOne({ _id: runId, account_id: accountId });
}

/** Writes the end of a run once; later calls (activity retries) change nothing. Returns whether this call wrote it. */
export async function finalizeRunRecord(c: Pick<Collections, 'runs'>, final: RunFinal): Promise<boolean> {
  const res = await c.runs.updateOne(
    { _id: final.runId, finalized: { $ne: true } },
    {
      $set: {
        status: final.status,
        output: final.output,
        error: final.error,
        total_cost: final.totalCost,
        completed_at: new Date(final.completedAtMs),
        events: final.events,
        finalized: true,
      },
    },
  );
  return res.modifiedCount === 1;
}

/** Forgets a run whose workflow could not be started, so it never shows as pending forever. */
export async function deleteRun(c: Pick<Collections, 'runs'>, runId: string): Promise<void> {
  await c.runs.deleteOne({ _id: runId, finalized: { $ne: true } });
}
