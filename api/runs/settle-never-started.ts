/**
 * A run recorded by an API process that died before starting its workflow (store/never-started.ts
 * says what that is and how it ends): a read (or a stream's poller) that finds no workflow for a
 * `pending` record older than NEVER_STARTED_AFTER_MS settles it here. A retry with the run's
 * Idempotency-Key may start such a record's workflow instead, but only while it is younger than
 * RESUMABLE_FOR_MS (api/runs/idempotent-start.ts): the two windows never meet, so a run is never
 * both settled `failed` and started.
 */
import type { Collections } from '../../store/db';
import type { RunDoc } from '../../store/documents';
import { findRunHead, findRunWithoutLog } from '../../store/runs';
import {
  NEVER_STARTED_AFTER_MS,
  neverStarted,
  settleNeverStarted,
  type UnstartedRecord,
} from '../../store/never-started';

export {
  NEVER_STARTED_AFTER_MS,
  NEVER_STARTED_ERROR,
  neverStarted,
} from '../../store/never-started';

/**
 * How long a retry may still start the workflow of a `pending` record that has none: two minutes
 * short of NEVER_STARTED_AFTER_MS, far more than a start's reads and its deadlined call to
 * Temporal take.
 */
export const RESUMABLE_FOR_MS = NEVER_STARTED_AFTER_MS - 2 * 60_000;

/** Whether a retry may still start the workflow of a `pending` record that has none (see RESUMABLE_FOR_MS). */
export function resumable(record: Pick<RunDoc, 'created_at'>, now = Date.now()): boolean {
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
  record: UnstartedRecord,
): Promise<RunDoc | null> {
  await settleNeverStarted(collections, record);
  return findRunHead(collections, record.account_id, record._id);
}
