/**
 * A run recorded by an API process that died before starting its workflow (the start writes the
 * record first, so the run is readable the moment its id is returned): no worker will ever end it,
 * so its record would say `pending` forever and keep its credit held (D17). A read (or a stream's
 * poller) that finds no workflow for a `pending` record older than NEVER_STARTED_AFTER_MS settles
 * it here: `failed`, saying so, billed nothing, its hold given back by its one ledger entry.
 * Idempotent like every end of a run (store/run-end.ts): two reads settling it at once book one.
 * A retry with the run's Idempotency-Key may start such a record's workflow instead, but only while
 * it is younger than RESUMABLE_FOR_MS (api/runs/idempotent-start.ts): the two windows never meet, so
 * a run is never both settled `failed` and started.
 */
import type { Collections } from '../../store/db';
import type { RunDoc } from '../../store/documents';
import { recordRunEnd } from '../../store/run-end';
import { findRunHead, findRunWithoutLog } from '../../store/runs';
import type { RunFinal } from '../../domain/run';
import { createdEventOf, settledFailureEvent } from '../stream/stream-events';

/** How long a record may have no workflow before it is taken for a start that died (far past any start's request). */
export const NEVER_STARTED_AFTER_MS = 15 * 60_000;

/**
 * How long a retry may still start a record's workflow: two minutes short of NEVER_STARTED_AFTER_MS,
 * far more than a start's reads and its deadlined call to Temporal take.
 */
export const RESUMABLE_FOR_MS = NEVER_STARTED_AFTER_MS - 2 * 60_000;

export const NEVER_STARTED_ERROR =
  'the run was never started: the service stopped while starting it. Nothing ran and nothing is billed; start it again.';

type Record = Pick<
  RunDoc,
  '_id' | 'account_id' | 'status' | 'created_at' | 'published_workflow_id' | 'hold_usd'
>;

/** Whether a record Temporal has no workflow for is a start that died (a younger one may still be starting). */
export function neverStarted(record: Record, now = Date.now()): boolean {
  return record.status === 'pending' && now - record.created_at.getTime() > NEVER_STARTED_AFTER_MS;
}

/** Whether a retry may still start the workflow of a `pending` record that has none (see RESUMABLE_FOR_MS). */
export function resumable(record: Pick<Record, 'created_at'>, now = Date.now()): boolean {
  return now - record.created_at.getTime() < RESUMABLE_FOR_MS;
}

/** Ends the run if its record is one (a stream's poller found no workflow for it). */
export async function settleIfNeverStarted(
  collections: Pick<Collections, 'runs' | 'ledger'>,
  runId: string,
): Promise<void> {
  const record = await findRunWithoutLog(collections, runId, { inputs: false });
  if (record && neverStarted(record)) await settleNeverStarted(collections, record);
}

/** Ends such a run, and answers its record as now stored (a read's or a repeat's answer). */
export async function endNeverStarted(
  collections: Pick<Collections, 'runs' | 'ledger'>,
  record: Record,
): Promise<RunDoc | null> {
  await settleNeverStarted(collections, record);
  return findRunHead(collections, record.account_id, record._id);
}

/** Ends such a run: `failed`, nothing billed, its hold given back. */
export async function settleNeverStarted(
  collections: Pick<Collections, 'runs' | 'ledger'>,
  record: Record,
): Promise<void> {
  const final: RunFinal = {
    runId: record._id,
    accountId: record.account_id,
    status: 'failed',
    output: null,
    error: NEVER_STARTED_ERROR,
    totalCost: 0,
    completedAtMs: Date.now(),
    events: [createdEventOf(record), settledFailureEvent(1, NEVER_STARTED_ERROR)],
    holdUsd: record.hold_usd ?? 0,
  };
  await recordRunEnd(collections, final, 'settle');
}
