/**
 * A run whose workflow Temporal closed without letting it finish (terminated by an operator or by
 * Temporal itself, timed out) never ran its finalizeRun: its record would say `pending` forever.
 * The API notices such a run when it asks it for its state (run-gateway.ts rejects queries of
 * workflows that did not complete cleanly) and settles it here (D31): `failed`, with an
 * error saying what happened, billed for what ran (the run's own count, replayed from its history
 * by a worker, and what the blocks it was still waiting for stored: keptEnd), keeping the items
 * it finished as a failed run's own end does (D35, D38), its event log ending in
 * `response.failed`. Writing it is idempotent, like finalize.
 * A run with a webhook then has its delivery started, as its own end would have (D20): a caller
 * waiting for the webhook hears of the failure instead of waiting forever.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Collections } from '../../store/db';
import { findRunWithoutLog } from '../../store/runs';
import { recordChunkedRunEnd } from '../../store/run-end';
import { tallyStoredBlock } from '../../store/block-tally';
import {
  isTerminalEvent,
  type OutputItem,
  type OutputPage,
  type RunEnding,
  type RunFinal,
  type RunOutput,
  type RunSnapshot,
} from '../../domain/run';
import { RunLog } from '../../domain/run-log';
import { splitFinal } from '../../domain/run-chunks';
import { addNodeUsage, blockNodeUsage, emptyUsage } from '../../domain/run-usage';
import { settledFailureEvent } from '../stream/stream-events';
import {
  DEFAULT_WEBHOOK_RETRY_INITIAL_MS,
  NODE_HEARTBEAT_TIMEOUT_MS,
  type WebhookArgs,
} from '../../workflows/definitions';

/** Temporal's WorkflowExecutionStatus numbers, as a reason a person reads. */
const CLOSED_AS: Record<number, string> = {
  3: 'failed',
  4: 'cancelled',
  5: 'terminated',
  7: 'timed out',
};

/**
 * How long after its workflow closed a block's attempt may still store rows. The attempt runs on
 * until a heartbeat (one a second) is answered NotFound, then stops its calls and writes the rows
 * it finished (about a second after a terminate, as measured); one not heard from for
 * NODE_HEARTBEAT_TIMEOUT_MS is what Temporal itself takes for dead; 2 s more for that last write.
 * A settle that finds a block in flight counts its pages only once the close is this old: counted
 * earlier, rows stored after it were readable, unbilled, and carried free by a re-run (D38).
 */
export const LATE_WRITES_MS = NODE_HEARTBEAT_TIMEOUT_MS + 2_000;

/** Items asked of a closed run's result in one replay (a page is also bounded by its bytes, 1 MiB). */
const KEPT_PAGE_ITEMS = 10_000;

/**
 * What settling needs from Temporal: the closed run's own state, page by page (null: none to be
 * had), its held items, when it closed (null: unknown), and a webhook's delivery.
 */
export interface SettleTemporal {
  closedSnapshot(
    runId: string,
    afterSequence: number,
    ending?: boolean,
  ): Promise<RunSnapshot | null>;
  closedOutputPage(
    runId: string,
    label: string,
    afterItemId: string | null,
    limit: number,
  ): Promise<OutputPage | null>;
  closedAt(runId: string): Promise<Date | null>;
  startWebhookDelivery(args: WebhookArgs): Promise<void>;
}

/** Writes the end of a run whose workflow closed with `status` without finalizing; a finalized run is left as it is. */
export async function settleRun(
  collections: Pick<Collections, 'runs' | 'runChunks' | 'ledger' | 'itemBlocks'>,
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
  let ending: RunEnding | undefined;
  for (;;) {
    // What the run keeps is asked of the first answer alone: every replay of a closed run is the same.
    const page = await temporal.closedSnapshot(runId, log.length - 1, last === null);
    if (!page) break;
    if (last === null) ending = page.ending;
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
    error,
    // No replay to be had: nothing is known to have run, nothing is billed.
    ...(last ? await keptEnd(collections, temporal, runId, last, ending) : noEnd),
    completedAtMs: Date.now(),
    events,
    itemIdBase: log.itemIdBase,
    ...(itemCodes ? { itemCodes } : {}),
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

/** What a settle writes of what the run ran and keeps (keptEnd). */
type KeptEnd = Pick<RunFinal, 'output' | 'itemsAtRows' | 'storedOutputs' | 'totalCost' | 'usage'>;

const noEnd: KeptEnd = { output: null, totalCost: 0 };

/**
 * What the settled run is billed for and keeps, as its own failed end would have written it:
 * the replayed count (`last`), plus what each block it was still waiting for stored (counted from
 * its pages once no late write can come, LATE_WRITES_MS, as the workflow counts a block that
 * failed: the `tallyBlock` activity's count), never past `max_cost`; the items it finished, each
 * at its row (`itemsAtRows`, so a re-run of failed items carries them instead of calling them
 * again, D38), and its results in the store. Without `ending` (workflow code from before it, or
 * a kept result that could not be read back) the run keeps no items, as before.
 */
async function keptEnd(
  collections: Pick<Collections, 'itemBlocks'>,
  temporal: SettleTemporal,
  runId: string,
  last: RunSnapshot,
  ending: RunEnding | undefined,
): Promise<KeptEnd> {
  const counted: KeptEnd = {
    output: null,
    totalCost: last.total_cost,
    ...(last.usage ? { usage: last.usage } : {}),
  };
  if (!ending) return counted;
  let cost = last.total_cost;
  let usage = last.usage ?? emptyUsage();
  if (ending.blocksInFlight.length > 0) await lateWritesOver(temporal, runId);
  for (const block of ending.blocksInFlight) {
    const { node: nodeId, first, count } = block;
    const tally = await tallyStoredBlock(collections, { runId, nodeId, first, count });
    cost += tally.costUsd;
    if (block.io)
      usage = addNodeUsage(usage, block.node, blockNodeUsage(tally.costUsd, tally.usage));
  }
  const totalCost = Math.round(Math.min(cost, ending.maxCostUsd ?? Infinity) * 1e9) / 1e9;
  const held = await heldItems(temporal, runId, ending.held);
  const stored = Object.keys(ending.storedOutputs ?? {});
  return {
    output: held && { ...Object.fromEntries(stored.map((label) => [label, []])), ...held },
    ...(held && !ending.renumbered ? { itemsAtRows: true } : {}),
    ...(ending.storedOutputs ? { storedOutputs: ending.storedOutputs } : {}),
    totalCost,
    usage,
  };
}

/** Waits until the run's workflow closed LATE_WRITES_MS ago (the whole of it when the close time is unknown). */
async function lateWritesOver(temporal: SettleTemporal, runId: string): Promise<void> {
  const closedAt = await temporal.closedAt(runId);
  const since = closedAt ? Date.now() - closedAt.getTime() : 0;
  const left = Math.min(LATE_WRITES_MS, LATE_WRITES_MS - since);
  if (left > 0) await sleep(left);
}

/**
 * The finished items of the results the run held itself (`held`: how many, by label), at their
 * rows, read back page by page; null when a page cannot be read (then nothing is kept).
 */
async function heldItems(
  temporal: SettleTemporal,
  runId: string,
  held: Record<string, number>,
): Promise<RunOutput | null> {
  const output: RunOutput = {};
  for (const [label, finished] of Object.entries(held)) {
    const items: OutputItem[] = [];
    for (let after: string | null = null; finished > 0;) {
      const page = await temporal.closedOutputPage(runId, label, after, KEPT_PAGE_ITEMS);
      if (!page) return null;
      // A live page lists the items not finished too, as `running`: never kept (D8).
      items.push(...page.items.filter((item) => item.status !== 'running'));
      if (!page.has_more || page.items.length === 0) break;
      after = page.items.at(-1)!.id;
    }
    output[label] = items;
  }
  return output;
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
