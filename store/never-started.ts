/**
 * Runs recorded by an API process that died before starting their workflow (the start writes the
 * record first, so the run is readable the moment its id is returned): no worker will ever end
 * one, so its record would say `pending` forever and keep its credit held (D17). Such a record
 * is settled `failed`, billed nothing, its hold given back by its one ledger entry, once it is
 * older than NEVER_STARTED_AFTER_MS and Temporal has no workflow of its id: by a read or a
 * stream that finds it (api/runs/settle-never-started.ts), and by the hourly housekeeping
 * (activities/retention.ts) for one nobody reads, e.g. the run of a start whose caller never
 * learned its id. Idempotent like every end of a run (store/run-end.ts): two settling it at once
 * book one end.
 */
import { createdEvent, failedEvent, type RunFinal } from '../domain/run';
import type { Collections } from './db';
import type { RunDoc } from './documents';
import { recordRunEnd } from './run-end';

/** How long a record may have no workflow before it is taken for a start that died (far past any start's request). */
export const NEVER_STARTED_AFTER_MS = 15 * 60_000;

/**
 * Its error. A record without a workflow is also what an operator leaves who deletes a live run's
 * execution in Temporal (its UI's Delete): read by an API process that never saw it run, it is
 * settled so too, though it may have run (and made calls) before, so the message says nothing ran
 * only as one possibility. The process that saw it started never settles it so (RunGateway knows
 * it started: a missing workflow is then no news, not `missing`).
 */
export const NEVER_STARTED_ERROR =
  'the run has no workflow: the service stopped while starting it, or its workflow was deleted from the workflow service. Nothing is billed for it; start it again.';

export type UnstartedRecord = Pick<
  RunDoc,
  '_id' | 'account_id' | 'status' | 'created_at' | 'published_workflow_id' | 'hold_usd'
>;

/** Whether a record Temporal has no workflow for is a start that died (a younger one may still be starting). */
export function neverStarted(record: UnstartedRecord, now = Date.now()): boolean {
  return record.status === 'pending' && now - record.created_at.getTime() > NEVER_STARTED_AFTER_MS;
}

/** Ends such a run: `failed`, nothing billed, its hold given back. */
export async function settleNeverStarted(
  collections: Pick<Collections, 'runs' | 'ledger'>,
  record: UnstartedRecord,
): Promise<void> {
  const final: RunFinal = {
    runId: record._id,
    accountId: record.account_id,
    status: 'failed',
    output: null,
    error: NEVER_STARTED_ERROR,
    totalCost: 0,
    completedAtMs: Date.now(),
    events: [
      createdEvent({
        runId: record._id,
        createdAtMs: record.created_at.getTime(),
        publishedWorkflowId: record.published_workflow_id,
      }),
      failedEvent(1, NEVER_STARTED_ERROR),
    ],
    holdUsd: record.hold_usd ?? 0,
  };
  await recordRunEnd(collections, final, 'settle');
}

/**
 * The housekeeping's pass: every `pending` record older than NEVER_STARTED_AFTER_MS whose
 * workflow `exists` says is missing is settled. A run's record says `pending` until its end is
 * written, so live runs past 15 minutes are asked about too (each one question to Temporal an
 * hour, up to the operator's run timeout); all of them, read as a stream: a first thousand live
 * ones hid a never-started run behind them when the pass stopped there. Returns how many it settled.
 */
export async function settleUnstartedRuns(
  c: Pick<Collections, 'runs' | 'ledger'>,
  exists: (runId: string) => Promise<boolean>,
  now = Date.now(),
): Promise<number> {
  const records = c.runs.find(
    {
      status: 'pending',
      finalized: false,
      created_at: { $lt: new Date(now - NEVER_STARTED_AFTER_MS) },
    },
    {
      projection: {
        _id: 1,
        account_id: 1,
        status: 1,
        created_at: 1,
        published_workflow_id: 1,
        hold_usd: 1,
        deleting: 1,
      },
    },
  );
  let settled = 0;
  for await (const record of records) {
    if (record.deleting || (await exists(record._id))) continue;
    await settleNeverStarted(c, record);
    settled++;
  }
  return settled;
}
