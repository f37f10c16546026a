/**
 * A run whose workflow Temporal closed without letting it finish (terminated by an operator or by
 * Temporal itself, timed out) never ran its finalizeRun: its record would say `pending` forever.
 * The API notices such a run when it asks it for its state (run-gateway.ts rejects queries of
 * workflows that did not complete cleanly) and settles it here (D31): `failed`, with an
 * error saying what happened, billed for what ran (the run's own count, replayed from its history
 * by a worker), its event log ending in `response.failed`. Writing it is idempotent, like finalize.
 * A run with a webhook then has its delivery started, as its own end would have (D20): a caller
 * waiting for the webhook hears of the failure instead of waiting forever.
 */
import type { Collections } from '../../store/db';
import { findRunWithoutLog } from '../../store/runs';
import { recordChunkedRunEnd } from '../../store/run-end';
import { isTerminalEvent, type RunFinal, type RunSnapshot } from '../../domain/run';
import { RunLog } from '../../domain/run-log';
import { splitFinal } from '../../domain/run-chunks';
import { settledFailureEvent } from '../stream/stream-events';
import { DEFAULT_WEBHOOK_RETRY_INITIAL_MS, type WebhookArgs } from '../../workflows/definitions';

/** Temporal's WorkflowExecutionStatus numbers, as a reason a person reads. */
const CLOSED_AS: Record<number, string> = {
  3: 'failed',
  4: 'cancelled',
  5: 'terminated',
  7: 'timed out',
};

/** What settling needs from Temporal: the closed run's own state, page by page (null: none to be had), and a webhook's delivery. */
export interface SettleTemporal {
  closedSnapshot(runId: string, afterSequence: number): Promise<RunSnapshot | null>;
  startWebhookDelivery(args: WebhookArgs): Promise<void>;
}

/** Writes the end of a run whose workflow closed with `status` without finalizing; a finalized run is left as it is. */
export async function settleRun(
  collections: Pick<Collections, 'runs' | 'runChunks' | 'ledger'>,
  temporal: SettleTemporal,
  runId: string,
  status: number,
  webhookRetryInitialMs = DEFAULT_WEBHOOK_RETRY_INITIAL_MS,
): Promise<void> {
  const doc = await findRunWithoutLog(collections, runId, { inputs: false });
  if (!doc || doc.finalized) return;
  // The log as the workflow answers it, page by page, kept compact (a million rows' events: D35).
  const log = new RunLog();
  let last: RunSnapshot | null = null;
  for (;;) {
    const page = await temporal.closedSnapshot(runId, log.length - 1);
    if (!page) break;
    last = page;
    // D35: compact answers, so a million rows' log is a replay or two, not one per 5,000 events.
    if (log.appendAnswer(page) === 0 || log.length >= page.eventCount) break;
  }
  const error = `the run's workflow was ${CLOSED_AS[status] ?? 'closed'} outside the service before the run could finish`;
  const ended = log.last();
  // A run that ended but could not persist: this end replaces its own.
  const kept = last && ended && isTerminalEvent(ended) ? log.length - 1 : log.length;
  const failed = settledFailureEvent(kept, error);
  // Between the first event and this end, item events only: handed on as numbers (RunFinal.itemCodes).
  const itemCodes = kept > 1 ? log.itemCodes(1, kept) : undefined;
  const events = itemCodes
    ? [log.at(0), failed]
    : [...Array.from({ length: kept }, (_, seq) => log.at(seq)), failed];
  const final: RunFinal = {
    runId,
    accountId: doc.account_id,
    status: 'failed',
    output: null,
    error,
    totalCost: last?.total_cost ?? 0, // no replay to be had: nothing is known to have run, nothing is billed
    completedAtMs: Date.now(),
    events,
    itemIdBase: log.itemIdBase,
    ...(itemCodes ? { itemCodes } : {}),
    ...(last?.usage ? { usage: last.usage } : {}),
  };
  const { final: head, chunks } = splitFinal(final);
  await recordChunkedRunEnd(collections, head, chunks, 'settle');
  if (doc.webhook)
    await temporal.startWebhookDelivery({
      runId,
      accountId: doc.account_id,
      url: doc.webhook,
      retryInitialMs: webhookRetryInitialMs,
    });
}

/**
 * `settle` run at most once at a time per run in this process. Every read of a closed, unfinished
 * run asks for its settling (api/temporal/run-gateway.ts), and a settle asks a worker to replay the
 * run's history once per page of its log (compact pages: one or two for a million rows in blocks,
 * more for rows run one by one), each replay seconds for a big run. A caller reading the run
 * meanwhile (a client polling it every second) joins the settle under way instead of starting
 * one more round of replays of its own.
 */
export function oneSettleAtATime(
  settle: (runId: string, status: number) => Promise<void>,
): (runId: string, status: number) => Promise<void> {
  const underWay = new Map<string, Promise<void>>();
  return (runId, status) => {
    let settling = underWay.get(runId);
    if (!settling) {
      settling = settle(runId, status).finally(() => underWay.delete(runId));
      underWay.set(runId, settling);
    }
    return settling;
  };
}
