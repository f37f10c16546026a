/**
 * A run whose workflow Temporal closed without letting it finish (terminated by an operator or by
 * Temporal itself, timed out) never ran its finalizeRun: its record would say `pending` forever.
 * The API notices such a run when it asks it for its state (run-gateway.ts rejects queries of
 * workflows that did not complete cleanly) and settles it here (D31): `failed`, with an
 * error saying what happened, billed for what ran (the run's own count, replayed from its history
 * by a worker), its event log ending in `response.failed`. Writing it is idempotent, like finalize.
 */
import type { Collections } from '../../store/db';
import { findRunRecord } from '../../store/runs';
import { recordChunkedRunEnd } from '../../store/run-end';
import { isTerminalEvent, type RunEvent, type RunFinal, type RunSnapshot } from '../../domain/run';
import { splitFinal } from '../../domain/run-chunks';
import { settledFailureEvent } from '../stream/stream-events';

/** Temporal's WorkflowExecutionStatus numbers, as a reason a person reads. */
const CLOSED_AS: Record<number, string> = {
  3: 'failed',
  4: 'cancelled',
  5: 'terminated',
  7: 'timed out',
};

/** The one thing settling needs from Temporal: the closed run's own state, page by page (null: none to be had). */
export type ClosedSnapshot = (runId: string, afterSequence: number) => Promise<RunSnapshot | null>;

/** Writes the end of a run whose workflow closed with `status` without finalizing; a finalized run is left as it is. */
export async function settleRun(
  collections: Pick<Collections, 'runs' | 'runChunks' | 'ledger'>,
  closedSnapshot: ClosedSnapshot,
  runId: string,
  status: number,
): Promise<void> {
  const doc = await findRunRecord(collections, runId);
  if (!doc || doc.finalized) return;
  const events: RunEvent[] = [];
  let last: RunSnapshot | null = null;
  for (;;) {
    const page = await closedSnapshot(runId, events.length - 1);
    if (!page) break;
    last = page;
    // Every event that continues the log (a filter would compare against the length before the push: one event a page).
    for (const event of page.events)
      if (event.sequence_number === events.length) events.push(event);
    if (page.events.length === 0 || events.length >= page.eventCount) break;
  }
  const error = `the run's workflow was ${CLOSED_AS[status] ?? 'closed'} outside the service before the run could finish`;
  const ended = events.at(-1);
  if (last && ended && isTerminalEvent(ended)) events.pop(); // a run that ended but could not persist: this end replaces its own
  events.push(settledFailureEvent(events.length, error));
  const final: RunFinal = {
    runId,
    accountId: doc.account_id,
    status: 'failed',
    output: null,
    error,
    totalCost: last?.total_cost ?? 0, // no replay to be had: nothing is known to have run, nothing is billed
    completedAtMs: Date.now(),
    events,
    itemIdBase: firstItemId(events),
    ...(last?.usage ? { usage: last.usage } : {}),
  };
  const { final: head, chunks } = splitFinal(final);
  await recordChunkedRunEnd(collections, head, chunks, 'settle');
}

/** Item 0's id is the base every other item id follows from (domain/ids.ts idAtOffset). */
function firstItemId(events: RunEvent[]): string | undefined {
  for (const event of events) if ('item' in event && event.output_index === 0) return event.item.id;
  return undefined;
}
