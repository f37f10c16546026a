/** The workflow of one run (workflow id = run id): executes the graph, answers the snapshot query, persists the end once. */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  type ActivityOptions,
  CancellationScope,
  CancelledFailure,
  isCancellation,
  workflowInfo,
  condition,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  TemporalFailure,
  TimeoutFailure,
  type ActivityInterfaceFor,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type {
  BlockNode,
  IoNode,
  NodeBlockRequest,
  NodeBlockResult,
  NodeChunkResult,
  NodeRow,
  PortSource,
} from '../activities/types';
import { inlineRowMaxBytes, MAX_BLOCK_ROWS, PAGE_ROWS, type ItemRef } from '../domain/item-blocks';
import { callInputTooLarge, MAX_CALL_INPUT_BYTES, MAX_ROWS, utf8Bytes } from '../domain/run-size';
import { isId } from '../domain/ids';
import { packItem } from '../domain/items';
import { normalizeLabel } from '../domain/labels';
import { priorityKey } from '../domain/run-priority';
import { callsMade, uncountedIn, type CallUsage, type NodeUsage } from '../domain/run-usage';
import { executeGraph, isIoNode, type RowProgress, type StoredListNodes } from './engine';
import { planChunks } from './chunk-plan';
import { resolveFileInputs } from './file-inputs';
import { NodeFailure } from './errors';
import { Semaphore } from './semaphore';
import { RunState } from './run-state';
import { splitFinal } from '../domain/run-chunks';
import {
  awaitEndUpdate,
  blockTaskQueue,
  NODE_HEARTBEAT_TIMEOUT_MS,
  outputPageQuery,
  snapshotQuery,
  type RunArgs,
} from './definitions';
import { type RunStatus } from '../domain/run';
import { startWebhookDelivery } from './webhook-workflow';
import {
  PERSISTENCE_SUMMARIES,
  RunProgress,
  activitySummary,
  fileInputSummary,
  timerSummary,
} from './summaries';
import { withNamedTimeout } from './timers';
import { CarryOver, FailedRows, loadCarry, type BlockPlan } from './carry-over';
import { isPatched } from './patches';
import { CostCap, CostLimitReached } from './cost-cap';
import { answerSince } from './block-answers';
import { HistoryRoom } from './history-room';

/** D36: the Temporal priority key of every block (patch `blocks-fair`): accounts take turns on the block queue. */
const BLOCK_PRIORITY_KEY = priorityKey('normal');

/** Failure types an activity raises for a refusal that retrying cannot fix (docs/workflow-format.md "Providers"). */
export const NON_RETRYABLE_TYPES = ['ProviderRejected', 'InvalidNodeConfig'];

/** History bounds a run stays under (Temporal's own are 51,200 events and 50 MB; D35 keeps a run's history under 20,000 events). */
export const HISTORY_EVENTS_LIMIT = 18_000;
export const HISTORY_BYTES_LIMIT = 40 * 1024 * 1024;
/** Blocks a run's big nodes run in all: each takes ~4 events of HISTORY_EVENTS_LIMIT (P4c's million rows are 1,000). */
export const RUN_MAX_BLOCKS = 4_000;

/** Why a node of `blocks` more blocks fails. */
function blocksSpent(blocks: number): string {
  return `would run ${blocks} more blocks of rows, past the ${RUN_MAX_BLOCKS} a run's history holds (D31): feed a big list to fewer nodes, or split it into smaller runs`;
}
/** JSON bytes of a row's answer besides its item (its index, cost and usage), at most. */
const ROW_ANSWER_OVERHEAD = 512;

/** Runs one published workflow version to its end and returns the final status. */
export async function runWorkflow(
  args: RunArgs,
): Promise<{ status: RunStatus; total_cost: number }> {
  // D31: the outputs the run holds are bounded in all, asked only past a bound.
  const state = new RunState(args, { now: () => Date.now(), random: Math.random }, () =>
    isPatched('run-items-bound'),
  );
  setHandler(snapshotQuery, (afterSequence, options) =>
    state.snapshot(afterSequence ?? -1, options ?? {}),
  );
  // D31: GET …/outputs/{key} of a live run (a query adds nothing to the history: replay-safe).
  setHandler(outputPageQuery, (label, afterItemId, limit) =>
    state.outputPage(label, afterItemId, limit),
  );
  // D28: how many callers wait for the end right now (a `Prefer: wait` start, a stream's poller).
  let waiting = 0;
  setHandler(awaitEndUpdate, async () => {
    waiting += 1;
    await condition(() => state.status !== 'running');
    waiting -= 1;
    return state.endSnapshot();
  });

  const { options } = args;
  const { nodeOptions, nodes, persistence } = runProxies(options);
  const slots = new Semaphore(options.concurrency);
  const cap = runCap(args, state, persistence);
  // D31: the history's room for inline rows' answers, held by the chunks in flight.
  const room = new HistoryRoom(HISTORY_BYTES_LIMIT, {
    historyBytes: () => workflowInfo().historySize,
    endBytes: () => state.outputBytes,
  });
  // D33: nodes and items done, in the UI's "current details" (no customer data).
  const progress = new RunProgress(args.graph.nodes.length, setCurrentDetails);

  let carry: CarryOver | undefined;
  const failedRows = new FailedRows(); // D38
  const { runGraph } = new RunActivities({
    args,
    options,
    state,
    nodeOptions,
    nodes,
    persistence,
    slots,
    cap,
    room,
    progress,
    carry: () => carry,
    failedRows,
  });
  try {
    // D38: a re-run of failed items learns first what its parent holds (workflows/carry-over.ts).
    if (args.rerun) carry = await loadCarry(args, args.rerun.parentRunId, persistence);
    await withNamedTimeout(options.runTimeoutMs, timerSummary(options.runTimeoutMs), runGraph);
    // D8: a cancel that came while the last calls were answering (they finished before it reached
    // them) still ends the run cancelled, as its 202 said; what finished stays readable and billed.
    state.finish(cancelledLate() ? 'cancelled' : 'completed');
  } catch (err) {
    if (isCancellation(err)) {
      // The root scope is cancelled only by a cancel request; otherwise our own timeout fired (D10),
      // or the caller's timeout_seconds (D36), which the error names.
      if (CancellationScope.current().consideredCancelled) state.finish('cancelled');
      else if (options.timeoutSeconds !== undefined)
        state.finish(
          'failed',
          `run timed out: the run reached its timeout_seconds of ${options.timeoutSeconds}`,
        );
      else state.finish('failed', 'run timed out');
    } else if (err instanceof CostLimitReached) {
      // The graph's promise rejects at once, but units in flight (other chunks, blocks, branches)
      // finish first and are billed; nothing new starts (the cap refuses it).
      await cap?.drain();
      state.finish('failed', err.message);
    } else if (err instanceof NodeFailure) {
      state.finish('failed', err.message);
    } else {
      throw err; // a bug in workflow code: let Temporal retry the workflow task instead of failing the run
    }
  }

  progress.ended(state.status);

  const { final, chunks } = splitFinal(failedRows.attach(state.final())); // D38
  await CancellationScope.nonCancellable(() =>
    chunks.length === 0 && !answersFirst(waiting) && isPatched('finalize-local')
      ? saveEndLocally(persistence, final)
      : saveEnd(persistence, final, chunks),
  );
  // D20: after the record is final (the webhook carries it); a child this run abandons, so the run ends now.
  const { webhook } = args;
  if (webhook)
    await CancellationScope.nonCancellable(() => startWebhookDelivery({ ...args, webhook }));
  return { status: state.status, total_cost: final.totalCost };
}

/**
 * D36 max_cost caps a run; D17: a run without one that makes priced calls is capped at its hold,
 * grown from the account's credit as it needs (patch `credit-cap`, asked only when a unit does not
 * fit, so until then it issues the same commands as before). Other runs have no cap.
 */
function runCap(
  args: RunArgs,
  state: RunState,
  persistence: ActivityInterfaceFor<Activities>,
): CostCap | undefined {
  const { costCap, creditCap } = args.options;
  if (costCap) return new CostCap(costCap, () => state.spent);
  if (!creditCap || args.holdUsd === undefined) return undefined;
  let grants = 0;
  return new CostCap(
    { maxUsd: args.holdUsd, perCallUsd: creditCap.perCallUsd },
    () => state.spent,
    {
      bounded: () => isPatched('credit-cap'),
      extend: async (wantUsd) => {
        const request = { runId: args.runId, accountId: args.accountId, grant: ++grants, wantUsd };
        const extend = () => persistence.extendRunHold(request);
        // A cancel does not abandon an extension the store may be booking: its answer is awaited,
        // so the run's end gives back what it held (patch `extension-awaited`).
        const granted = await (extensionAwaited()
          ? CancellationScope.nonCancellable(extend)
          : extend());
        state.holdExtended(granted);
        return granted;
      },
    },
  );
}

/**
 * D17: whether a hold extension is awaited to its answer even when the run is cancelled, times out
 * or fails meanwhile (patch `extension-awaited`, asked at the first extension). Old runs abandon
 * it, and an extension the store booked after their end stays held until the hold sweep.
 */
function extensionAwaited(): boolean {
  return isPatched('extension-awaited');
}

/** D36: a unit the budgets in flight leave no room for waits for them to settle (patch `cost-cap-waits`). */
function capWaits(): boolean {
  return isPatched('cost-cap-waits');
}

/**
 * D36: whether a block of a run with `max_cost` that the cap shrank asks it again for the rows it
 * left once what it ran is counted (patch `cost-cap-shrunk-blocks`, asked only then); old runs
 * end at the cost limit there, far below it (what the rows cost never freed room).
 */
function shrunkAsksAgain(options: RunArgs['options']): boolean {
  return options.costCap !== undefined && isPatched('cost-cap-shrunk-blocks');
}

/**
 * D38: whether a block runs no call (a re-run's block whose rows all completed before), so takes no
 * budget (patch `rerun-empty-blocks`, asked only then); old runs read it as a unit that does not
 * fit their max_cost, and stop at "cost limit reached" with nothing spent.
 */
function noCalls(calls: number): boolean {
  return calls === 0 && isPatched('rerun-empty-blocks');
}

/** D31: a chunk whose worst case the history has no room for waits for those in flight (patch `history-room`). */
function historyWaits(): boolean {
  return isPatched('history-room');
}

/** Whether the run was asked to cancel though its graph finished (patch `cancel-after-last-work`). */
function cancelledLate(): boolean {
  return CancellationScope.current().consideredCancelled && isPatched('cancel-after-last-work');
}

/**
 * D28: a small run that somebody waits for (its `awaitEnd` update is in) writes its end as an
 * ordinary activity (patch `answer-waiters-first`): the workflow task that ends the run then
 * answers the update at once, where the local end (saveEndLocally) would hold that answer until
 * its writes are done. The waiters' condition is met in this task: they are answered with it.
 */
function answersFirst(waiting: number): boolean {
  return waiting > 0 && isPatched('answer-waiters-first');
}

/**
 * D38: the blocks of a carried node whose parent's failed rows are known: one block of them all
 * when the node is small enough (patch `rerun-one-block`, CarryOver.onePlan), else `known`.
 */
function knownPlan(carry: CarryOver, nodeId: string, count: number, known: BlockPlan[]) {
  const one = carry.onePlan(nodeId, count);
  return one && isPatched('rerun-one-block') ? one : known;
}

/** The run's activity proxies: node work (D10), and the writes of its tallies and its end. */
function runProxies(options: RunArgs['options']) {
  const nodeOptions: ActivityOptions = {
    startToCloseTimeout: options.nodeAttemptTimeoutMs, // D10: one attempt of a node
    // Node activities heartbeat every second: a dead worker's attempt is retried after 10 s
    // instead of the whole attempt timeout, and a cancel (D8) reaches the call in flight,
    // which the run waits for so the provider really sees the request aborted.
    heartbeatTimeout: NODE_HEARTBEAT_TIMEOUT_MS,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: options.retryInitialMs,
      backoffCoefficient: 2,
      maximumInterval: Math.max(options.retryInitialMs, 30_000),
      maximumAttempts: options.nodeMaxAttempts,
      nonRetryableErrorTypes: NON_RETRYABLE_TYPES,
    },
  };
  const nodes = proxyActivities<Activities>(nodeOptions);
  const persistence = proxyActivities<Activities>({
    // A handful of single-document writes: an attempt whose worker died is given up on (and retried elsewhere) after 10 s.
    startToCloseTimeout: 10_000,
    // The end of a run must reach MongoDB even if it is down for a while: retry without limit.
    retry: { initialInterval: 500, backoffCoefficient: 2, maximumInterval: 10_000 },
  });
  return { nodeOptions, nodes, persistence };
}

/**
 * D7: a small run's end (no chunks) as a local activity first (patch `finalize-local`): the worker
 * that finishes the run writes its end within the same workflow task, so Temporal records one
 * marker instead of an activity task and a second workflow task. Six attempts over ~12 s stay in
 * the worker; a store that does not answer by then gets the end as the ordinary activity, retried
 * without limit and adding nothing to the history while it waits.
 */
async function saveEndLocally(
  persistence: ActivityInterfaceFor<Activities>,
  final: ReturnType<typeof splitFinal>['final'],
): Promise<void> {
  const local = proxyLocalActivities<Activities>({
    startToCloseTimeout: 10_000,
    // Attempts 0.5, 1, 2, 4, 4 s apart. Not a schedule-to-close timeout: the SDK 1.24 core lets a
    // local activity retry past it when it expires between attempts.
    retry: {
      initialInterval: 500,
      backoffCoefficient: 2,
      maximumInterval: 4_000,
      maximumAttempts: 6,
    },
  });
  try {
    await local.finalizeRun.executeWithOptions({ summary: PERSISTENCE_SUMMARIES.finalizeRun }, [
      final,
    ]);
  } catch (err) {
    // A local activity fails with its last attempt's failure itself (not wrapped in an ActivityFailure).
    if (!(err instanceof TemporalFailure)) throw err;
    await saveEnd(persistence, final, []);
  }
}

/** Writes a run's end: its chunks, then the record that says how many. */
async function saveEnd(
  persistence: ActivityInterfaceFor<Activities>,
  final: ReturnType<typeof splitFinal>['final'],
  chunks: ReturnType<typeof splitFinal>['chunks'],
): Promise<void> {
  // A large run's events and output go first, a few chunks at a time; the record that says how many comes last.
  const saveChunk = (chunk: (typeof chunks)[number], i: number) =>
    persistence.saveRunChunk.executeWithOptions(
      { summary: PERSISTENCE_SUMMARIES.saveRunChunk(i, chunks.length) },
      [chunk],
    );
  // Two at a time: the activities scheduled together travel in one workflow-task completion, which
  // Temporal refuses above 4 MB (two chunks of at most 512 KB each stay far below it).
  for (let i = 0; i < chunks.length; i += 2)
    await Promise.all(chunks.slice(i, i + 2).map((chunk, j) => saveChunk(chunk, i + j)));
  await persistence.finalizeRun.executeWithOptions({ summary: PERSISTENCE_SUMMARIES.finalizeRun }, [
    final,
  ]);
}

/** D36: a unit's usage as its node's (calls made, tokens). */
function usageOf(
  usage: CallUsage | undefined,
): Pick<NodeUsage, 'provider_calls' | 'input_tokens' | 'output_tokens'> | undefined {
  return (
    usage && {
      provider_calls: callsMade(usage),
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
    }
  );
}

/**
 * D36: what a unit that ended its node made that no answer counted: carried by its last
 * attempt's failure, or by its last checkpoint when that attempt timed out (activities/node-chunk.ts).
 */
function uncountedOf(err: unknown): ReturnType<typeof usageOf> {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (cause instanceof ApplicationFailure) return usageOf(uncountedIn(cause.details));
  if (cause instanceof TimeoutFailure) return usageOf(uncountedIn(cause.lastHeartbeatDetails));
  // Cancelled between two attempts, it has no checkpoint (the server's details say only
  // ACTIVITY_ID_NOT_STARTED): the calls of its earlier attempts are not known here.
  return undefined;
}

/** What one run's activities share, set up once by runWorkflow. */
interface RunResources {
  args: RunArgs;
  options: RunArgs['options'];
  state: RunState;
  /** Options of node activities (D10: one attempt of a node). */
  nodeOptions: ActivityOptions;
  nodes: ActivityInterfaceFor<Activities>;
  /** The run's writes of its end and tallies, retried without limit. */
  persistence: ActivityInterfaceFor<Activities>;
  /** The run's concurrency, shared by every node. */
  slots: Semaphore;
  /** D36 max_cost; absent for runs started without one. */
  cap: CostCap | undefined;
  /** D31: the history's room for what the chunks in flight may answer. */
  room: HistoryRoom;
  progress: RunProgress;
  /** D38: what a re-run's parent holds (loaded before the graph runs). */
  carry: () => CarryOver | undefined;
  /** D38: each stored node's failed rows, for the run's record (a re-run of failed items reads them). */
  failedRows: FailedRows;
}

/**
 * Everything a run starts as activities while its graph runs: node chunks, stored blocks, file
 * rows and file inputs, sharing the run's slots, cost cap, progress and state (RunResources).
 */
class RunActivities {
  /** D31: the blocks the run's big nodes may still plan (RUN_MAX_BLOCKS). */
  private blocksLeft = RUN_MAX_BLOCKS;

  constructor(private readonly run: RunResources) {}

  /** One chunk of a node's rows as an activity; failures that end the run become NodeFailures naming the node. */
  runChunk = async (
    node: IoNode,
    rows: NodeRow[],
    concurrency: number,
    rowMaxBytes: number,
  ): Promise<NodeChunkResult> => {
    const { args, options, nodes, nodeOptions } = this.run;
    const { nodeFailureOf } = this;
    // D10 bounds one attempt of one row; a chunk's attempt runs its rows in waves of `concurrency`.
    const waves = Math.ceil(rows.length / concurrency);
    const proxy =
      waves === 1
        ? nodes
        : proxyActivities<Activities>({
            ...nodeOptions,
            startToCloseTimeout: options.nodeAttemptTimeoutMs * waves,
          });
    try {
      const first = rows[0].index;
      const last = rows.at(-1)!.index;
      const summary = activitySummary(
        node,
        first === last ? { item: first } : { rows: [first, last] },
      ); // D33
      return await proxy.runNodeChunk.executeWithOptions({ summary }, [
        { runId: args.runId, accountId: args.accountId, node, rows, concurrency, rowMaxBytes },
      ]);
    } catch (err) {
      this.countMore(node.id, uncountedOf(err)); // D36: the chunk's calls, its rows lost with it
      throw nodeFailureOf(node, err);
    }
  };

  /**
   * D36: calls a unit made beyond the ones its answer's rows bill (a row's `failed_calls`, the
   * `uncounted` of an answer or of a failure that ends the node), with their tokens: counted in
   * the node's usage, never billed. Asked of the patch `failed-calls-counted` only when there are some.
   */
  countMore = (
    nodeId: string,
    more: Partial<Pick<NodeUsage, 'provider_calls' | 'input_tokens' | 'output_tokens'>> | undefined,
  ): void => {
    if (!more || !Object.values(more).some((n) => n > 0)) return;
    if (isPatched('failed-calls-counted')) this.run.state.addUsage(nodeId, more);
  };

  /** An activity's failure that ends the run, as a NodeFailure naming the node; a cancel stays one. */
  nodeFailureOf = (node: { id: string; type: string }, err: unknown): unknown => {
    const { options } = this.run;
    const cause = err instanceof ActivityFailure ? err.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.nonRetryable)
      return new NodeFailure(node.id, node.type, cause.message);
    if (cause && !isCancellation(err)) {
      return new NodeFailure(
        node.id,
        node.type,
        `gave up after ${options.nodeMaxAttempts} attempt(s): ${cause.message}`,
      );
    }
    return err;
  };

  /**
   * D35: a big I/O node (or a text node given a stored list) runs in blocks of rows, each an
   * activity that reads its rows from the store (or takes its slice of a list that came with the
   * request) and writes its items there. History carries the references, counts and costs only.
   * Every block is waited for; the first that fails cancels the others, and the rows a failed or
   * cancelled block finished are billed from the store.
   */
  runStoredRows = (
    node: BlockNode,
    ports: Record<string, PortSource>,
    sources: Record<string, string>,
    count: number,
  ): { list: ItemRef; done: Promise<void> } => {
    const { options, state, progress } = this.run;
    const carry = this.run.carry();
    const { runBlock } = this;
    // Blocks span whole pages (each page has one writer); two blocks in flight share the run's
    // concurrency, a node of one block uses all of it.
    const perBlock = Math.ceil(Math.min(MAX_BLOCK_ROWS, Math.ceil(count / 16)) / PAGE_ROWS);
    const blockRows = Math.max(1, perBlock) * PAGE_ROWS;
    // D38: a carried node whose parent's failed rows are known runs blocks of those rows only.
    const known = carry?.plan(node.id, count);
    const plan: BlockPlan[] =
      known && isPatched('rerun-known-failed-rows')
        ? knownPlan(carry!, node.id, count, known)
        : Array.from({ length: Math.ceil(count / blockRows) }, (_, b) => ({
            first: b * blockRows,
            count: Math.min(blockRows, count - b * blockRows),
          }));
    const blocks = plan.length;
    // D31: past what the run's history can hold the node fails before anything runs (patch
    // `run-blocks-bound`, asked only then): 50 text nodes reading a stored list of 900,000 rows
    // planned 45,000 blocks in one workflow task (4.9 s, the SDK aborts the worker past 5).
    this.blocksLeft -= blocks;
    if (this.blocksLeft < 0 && isPatched('run-blocks-bound'))
      throw new NodeFailure(node.id, node.type, blocksSpent(blocks));
    // D38: a block of a re-run runs only its few failed rows, so more of its blocks share the slots.
    const lanes = carry?.lanes(node.id) ?? 2;
    const inner =
      blocks === 1 ? options.concurrency : Math.max(1, Math.ceil(options.concurrency / lanes));
    state.reserveStored(node.id, count);
    if (isIoNode(node)) progress.itemsStarted(count);
    // D35 pipelining: a block's rows are ready for the next node of the chain once it is done.
    const ready = Array.from({ length: blocks }, () => {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      promise.catch(() => undefined); // a block nobody waits for may fail unobserved
      return { promise, resolve, reject };
    });
    const scope = new CancellationScope();
    const done = (async () => {
      // Two lanes take the node's blocks in order, so at most two of its blocks wait for the run's
      // slots at once and a next node's ready block is not queued behind all of this node's.
      let next = 0;
      const failures: unknown[] = [];
      const lane = async () => {
        while (failures.length === 0) {
          const block = next++;
          if (block >= blocks) return;
          try {
            await runBlock(node, ports, sources, block, plan[block], inner);
            ready[block].resolve();
          } catch (err) {
            failures.push(err);
            // D36: at the cost limit the blocks in flight finish (and are billed); nothing new starts.
            if (!isCancellation(err) && !(err instanceof CostLimitReached)) scope.cancel();
            return;
          }
        }
      };
      await scope.run(() => Promise.all(Array.from({ length: lanes }, lane)));
      if (failures.length > 0) {
        const failure = failures.find((err) => !isCancellation(err)) ?? failures[0];
        for (const block of ready) block.reject(failure);
        throw failure;
      }
    })();
    const list: ItemRef = {
      ref: node.id,
      count,
      ready: async (from, to) => {
        for (let b = 0; b < blocks; b++)
          if (plan[b].first < to && plan[b].first + plan[b].count > from) await ready[b].promise;
      },
    };
    return { list, done };
  };

  runBlock = async (
    node: BlockNode,
    ports: Record<string, PortSource>,
    sources: Record<string, string>,
    block: number,
    plan: BlockPlan,
    inner: number,
  ): Promise<void> => {
    const { first, count, run } = plan;
    const { args, options, nodeOptions, persistence, slots, cap, state } = this.run;
    const { guardHistory, nodeFailureOf, applyBlock } = this;
    const own: Record<string, PortSource> = {};
    for (const [name, source] of Object.entries(ports)) {
      // D38: a block that runs a few rows gets only their items.
      if ('items' in source && run)
        own[name] = { picked: run.flatMap((i) => (source.items[i] ? [[i, source.items[i]]] : [])) };
      else if ('items' in source)
        own[name] = { packed: source.items.slice(first, first + count).map(packItem) };
      else if ('ref' in source) {
        // D35 pipelining: wait for the rows this block reads; the activity gets the reference only.
        if (source.ready)
          await (source.count === 1 ? source.ready(0, 1) : source.ready(first, first + count));
        own[name] = { ref: source.ref, count: source.count };
      } else own[name] = source;
    }
    const calls = run?.length ?? count; // D38: the rows it runs
    const concurrency = Math.min(inner, Math.max(1, calls));
    const waves = Math.max(1, Math.ceil(calls / concurrency));
    const fairBlocks = isPatched('blocks-fair');
    const proxy = proxyActivities<Activities>({
      ...nodeOptions,
      startToCloseTimeout: options.nodeAttemptTimeoutMs * waves,
      // D35: a block waits for a worker's block slot in a queue of its own; old runs' blocks
      // share the run task queue (their worker holds an activity slot while they wait).
      ...(isPatched('blocks-queue') ? { taskQueue: blockTaskQueue(workflowInfo().taskQueue) } : {}),
      // D36: on a fair block queue the account takes turns with the others whatever priority it
      // claims; its blocks carry the run's priority for the worker's order within the account.
      ...(fairBlocks ? { priority: { priorityKey: BLOCK_PRIORITY_KEY } } : {}),
    });
    const unit = slots.with(async () => {
      if (CancellationScope.current().consideredCancelled)
        throw new CancelledFailure('run cancelled');
      guardHistory(node);
      // D36: a block that fits the budget only in part runs what fits (`limit`); D38: a re-run's
      // block with none of its node's failed rows makes no call: nothing to budget.
      let budget = noCalls(calls) ? undefined : await cap?.takeSettled(node.id, calls, capWaits);
      let limit = budget && budget.calls < calls ? budget.calls : undefined;
      state.storedStarted(node.id, first, count);
      state.blockStarted(node.id, first, count); // till it answers: a settle counts its pages
      const summary = activitySummary(node, { rows: [first, first + count - 1] }); // D33
      const request = this.blockRequest(node, block, plan, own, sources, concurrency);
      // D36: what the block's answers counted so far; each answer counts all its stored rows.
      let counted: NodeBlockResult | undefined;
      for (;;) {
        let result: NodeBlockResult;
        try {
          result = await proxy.runNodeBlock.executeWithOptions({ summary }, [
            {
              ...request,
              ...(limit !== undefined ? { limit } : {}),
              ...(counted ? { resumed: true } : {}),
              ...(fairBlocks ? { priorityKey: workflowInfo().priority?.priorityKey } : {}),
            },
          ]);
        } catch (err) {
          // D35: what the block finished before it failed or was cancelled stays readable and is billed.
          const tally = await CancellationScope.nonCancellable(() =>
            persistence.tallyBlock({ runId: args.runId, nodeId: node.id, first, count }),
          );
          applyBlock(node, first, count, answerSince(counted, tally, first, count));
          this.countMore(node.id, uncountedOf(err)); // D36: failed calls of rows no page holds
          budget?.release();
          throw nodeFailureOf(node, err);
        }
        applyBlock(node, first, count, answerSince(counted, result, first, count));
        budget?.release();
        if (result.cancelled) throw new CancelledFailure('run cancelled');
        if (limit === undefined || !cap) return;
        // D36: what the rows cost (often far below their budget) is counted now; the block asks
        // the cap again for the rows it left, waiting as any unit does while others are in flight.
        const left = this.shrunkRest(node, count, result, counted, cap);
        if (left <= 0) return;
        counted = result;
        if (CancellationScope.current().consideredCancelled)
          throw new CancelledFailure('run cancelled');
        guardHistory(node);
        budget = await cap.takeSettled(node.id, left, capWaits);
        limit = budget.calls < left ? budget.calls : undefined;
      }
    }, concurrency);
    await (cap ? cap.track(unit) : unit);
  };

  /** What a block's activity is asked but its `limit`, `resumed` and `priorityKey`, with its own port sources. */
  blockRequest = (
    node: BlockNode,
    block: number,
    { first, count, run }: BlockPlan,
    ports: Record<string, PortSource>,
    sources: Record<string, string>,
    concurrency: number,
  ): NodeBlockRequest => {
    const { args } = this.run;
    return {
      runId: args.runId,
      accountId: args.accountId,
      node,
      block,
      first,
      count,
      ports,
      sources,
      concurrency,
      ...this.run.carry()?.blockSource(node.id), // D38
      ...(run ? { runRows: run } : {}),
    };
  };

  /**
   * D36: the rows a block the cap shrank left to run (patch `cost-cap-shrunk-blocks`); old runs
   * (and D17's credit cap) end at the cap's limit after such a block. `counted`: what its earlier
   * answers counted, which a later answer must pass.
   */
  shrunkRest = (
    node: BlockNode,
    count: number,
    result: NodeBlockResult,
    counted: NodeBlockResult | undefined,
    cap: CostCap,
  ): number => {
    if (!shrunkAsksAgain(this.run.options)) {
      cap.reached = true;
      throw cap.limitReached();
    }
    if (counted && result.done <= counted.done && result.done < count)
      throw new NodeFailure(node.id, node.type, 'a block of rows made no progress');
    return count - result.done;
  };

  /** Counts what a block answered (or, after a failure, what its pages hold): cost, usage, rows done. */
  applyBlock = (node: BlockNode, first: number, count: number, result: NodeBlockResult): void => {
    const { state, cap, progress, failedRows } = this.run;
    state.blockAnswered(node.id, first);
    state.addCost(result.costUsd);
    // D36: usage counted from the stored rows like the cost (absent in answers recorded before D36).
    const usage = result.usage;
    // A text node's blocks (D35) cost nothing and, as its inline iterations, are no I/O work (D33, D36).
    const io = isIoNode(node);
    if (io)
      state.addUsage(node.id, {
        cost: result.costUsd,
        ...(usage && {
          provider_calls: usage.calls,
          input_tokens: usage.input_tokens,
          output_tokens: usage.output_tokens,
          items_completed: usage.completed,
          items_failed: usage.failed,
        }),
      });
    if (io) {
      this.countMore(node.id, { provider_calls: usage?.failed_calls ?? 0 });
      this.countMore(node.id, usageOf(result.uncounted));
    }
    if (usage) cap?.observe(node.id, usage.calls, result.costUsd);
    failedRows.note(node.id, result.failed); // D38
    const ranges: Array<[number, number]> =
      result.done === 0 ? [] : result.ranges.length > 0 ? result.ranges : [[first, first + count]];
    state.storedDone(node.id, ranges);
    if (io) for (let i = 0; i < result.done; i++) progress.itemDone();
  };

  /** D31/D35: list nodes whose rows come from an uploaded file (a `file` input, or a `json` input given a file id). */
  fileRows = (nodeId: string): (() => Promise<ItemRef>) | undefined => {
    const { args, slots, nodes } = this.run;
    const { nodeFailureOf } = this;
    const feed = args.graph.edges.find((edge) => edge.to === nodeId && edge.port === 'rows');
    const input = feed && args.graph.nodes.find((n) => n.id === feed.from);
    if (!input || input.type !== 'user_input') return undefined;
    if (input.input_type !== 'json' && input.input_type !== 'file') return undefined;
    const key = normalizeLabel(input.label);
    const fileId = args.inputs[key];
    if (!isId('file', fileId)) return undefined;
    return async () => {
      const { count } = await slots
        .with(() =>
          nodes.loadFileRows.executeWithOptions({ summary: fileInputSummary(nodeId) }, [
            {
              runId: args.runId,
              accountId: args.accountId,
              nodeId,
              key,
              fileId,
              maxRows: MAX_ROWS,
            },
          ]),
        )
        .catch((err: unknown) => {
          throw nodeFailureOf({ id: nodeId, type: 'batch' }, err);
        });
      return { ref: nodeId, count };
    };
  };

  /**
   * An I/O node's rows, as chunks (workflows/chunk-plan.ts) that share the run's slots. A chunk
   * answers with the rows it finished; what it left (a size budget) is asked for again.
   */
  runIoRows = async (node: IoNode, rows: NodeRow[], rowProgress: RowProgress): Promise<void> => {
    const { options, progress } = this.run;
    const { runChunkRows } = this;
    for (let i = 0; i < rows.length; i++) progress.itemStarted();
    // Every chunk is waited for, and the first that fails cancels the others (a scope of their own):
    // the rows a chunk finished before a failure or the run's cancel come back with its answer and
    // are billed (D8), instead of running on unseen after the run has ended.
    const chunks = new CancellationScope();
    // D31: the node's rows share what the history may take of their answers.
    const rowMaxBytes = inlineRowMaxBytes(rows.length);
    const outcomes = await chunks.run(() =>
      Promise.allSettled(
        planChunks(rows, options.concurrency).map(async (chunk) => {
          try {
            await runChunkRows(
              node,
              chunk.rows,
              { concurrency: chunk.slots, rowMaxBytes },
              rowProgress,
            );
          } catch (err) {
            // D36: at the cost limit the chunks in flight finish (and are billed); nothing new starts.
            if (!isCancellation(err) && !(err instanceof CostLimitReached)) chunks.cancel();
            throw err;
          }
        }),
      ),
    );
    const failures = outcomes.flatMap((o) =>
      o.status === 'rejected' ? [o.reason as unknown] : [],
    );
    if (failures.length > 0) throw failures.find((err) => !isCancellation(err)) ?? failures[0];
  };

  /** One planned chunk, asked again for the rows it left (a size budget) until all are done. */
  runChunkRows = async (
    node: IoNode,
    rows: NodeRow[],
    { concurrency, rowMaxBytes }: { concurrency: number; rowMaxBytes: number },
    rowProgress: RowProgress,
  ): Promise<void> => {
    const { state, slots, cap, room, progress } = this.run;
    const { guardHistory, historyFull, runChunk } = this;
    let left = rows;
    const settings = JSON.stringify(node); // the node's part of each call's input (call-input-bound)
    while (left.length > 0) {
      let budget: { calls: number; release: () => void } | undefined;
      let held: (() => void) | undefined;
      const unit = slots.with(async () => {
        // A chunk that waited for its slots while the run was cancelled, or another chunk failed, never starts.
        if (CancellationScope.current().consideredCancelled)
          throw new CancelledFailure('run cancelled');
        guardHistory(node);
        // D36: the rows whose worst case fits the run's budget (all of them without max_cost).
        budget = await cap?.takeSettled(node.id, left.length, capWaits);
        const batch = budget ? left.slice(0, budget.calls) : left;
        const input = JSON.stringify(batch);
        // Past what one call takes, Temporal would terminate the run (patch `call-input-bound`,
        // asked only then): the node fails, naming it, and the run ends as runs do.
        // At most 3 bytes of UTF-8 a character: below a third of the bound, no need to count.
        if (input.length + settings.length > MAX_CALL_INPUT_BYTES / 3) {
          const bytes = utf8Bytes(input) + utf8Bytes(settings);
          if (bytes > MAX_CALL_INPUT_BYTES && isPatched('call-input-bound'))
            throw new NodeFailure(node.id, node.type, callInputTooLarge(bytes));
        }
        // D31: the chunk's input and the most its answer may hold, then again at the run's end.
        const worst = input.length + 2 * batch.length * (rowMaxBytes + ROW_ANSWER_OVERHEAD);
        held = await room.take(worst, historyWaits);
        if (!held) throw historyFull(node);
        for (const row of batch) rowProgress.started(row.index);
        return runChunk(node, batch, concurrency, rowMaxBytes);
      }, concurrency);
      let result: NodeChunkResult;
      try {
        result = await (cap ? cap.track(unit) : unit);
      } finally {
        budget?.release();
        held?.();
      }
      for (const row of result.rows) {
        state.addCost(row.costUsd);
        // D36: calls and tokens as reported (absent in answers recorded before D36); items count in iterationDone.
        state.addUsage(node.id, {
          cost: row.costUsd,
          provider_calls: row.usage?.calls ?? 0,
          input_tokens: row.usage?.input_tokens ?? 0,
          output_tokens: row.usage?.output_tokens ?? 0,
        });
        this.countMore(node.id, { provider_calls: row.usage?.failed_calls ?? 0 });
        if (row.usage) cap?.observe(node.id, row.usage.calls, row.costUsd);
        rowProgress.done(row.index, row.items);
        progress.itemDone();
      }
      this.countMore(node.id, usageOf(result.uncounted)); // D36: failed calls of rows it left
      // D8: the rows that finished before the cancel are billed above; the rest never ran.
      if (result.cancelled) throw new CancelledFailure('run cancelled');
      const finished = new Set(result.rows.map((row) => row.index));
      const before = left.length;
      left = left.filter((row) => !finished.has(row.index));
      if (left.length === before)
        throw new NodeFailure(node.id, node.type, 'a chunk of rows made no progress');
    }
  };

  /**
   * Temporal terminates a workflow whose history passes 51,200 events or 50 MB, and a terminated
   * run could not write its record. Long before that the run fails on its own terms (D31).
   */
  guardHistory = (node: BlockNode): void => {
    const { historyLength, historySize } = workflowInfo();
    if (historyLength > HISTORY_EVENTS_LIMIT || historySize > HISTORY_BYTES_LIMIT)
      throw this.historyFull(node);
  };

  /** The node's failure once the history has no room left for its next unit (D31). */
  historyFull = (node: BlockNode): NodeFailure => {
    const { historyLength, historySize } = workflowInfo();
    const mb = (historySize / 1024 / 1024).toFixed(1);
    return new NodeFailure(
      node.id,
      node.type,
      `the run reached the limit of its execution history (${historyLength} events, ${mb} MB); split the input into smaller runs`,
    );
  };
  resolveFile = (req: Parameters<Activities['resolveFileInput']>[0], nodeId: string) => {
    const { slots, nodes } = this.run;
    return slots.with(() =>
      nodes.resolveFileInput.executeWithOptions({ summary: fileInputSummary(nodeId) }, [req]),
    );
  };

  /** D35: `select`, `join` and `batch` of a stored list, each an activity that reads it once it is done. */
  storedListReads = (): StoredListNodes => {
    const { args, slots, nodes } = this.run;
    const { nodeFailureOf } = this;
    const failed = (node: { id: string; type: string }) => (err: unknown) => {
      throw nodeFailureOf(node, err);
    };
    return {
      select: (node, list, at) =>
        slots
          .with(() =>
            nodes.selectStoredItem.executeWithOptions(
              { summary: activitySummary(node, { item: at }) },
              [{ runId: args.runId, list, at }],
            ),
          )
          .catch(failed(node)),
      join: (node, list, sourceId) =>
        slots
          .with(() =>
            nodes.joinStoredItems.executeWithOptions(
              { summary: activitySummary(node, { rows: [0, list.count - 1] }) },
              [{ runId: args.runId, node, list, sourceId, storeLarge: true }],
            ),
          )
          .catch(failed(node)),
      batch: (node, list) =>
        slots
          .with(() =>
            nodes.batchStoredRows.executeWithOptions(
              { summary: activitySummary(node, { rows: [0, list.count - 1] }) },
              [{ runId: args.runId, nodeId: node.id, list, maxRows: MAX_ROWS }],
            ),
          )
          .then(({ count }) => ({ ref: node.id, count }))
          .catch(failed(node)),
    };
  };

  /** The run's graph, with this run's hooks: its file inputs resolved first. */
  runGraph = async () => {
    const { args, options, state, progress } = this.run;
    const carry = this.run.carry();
    const { runIoRows, runStoredRows, fileRows, resolveFile, storedListReads } = this;
    // D19: file inputs become stored, signed parts first (workflows/file-inputs.ts).
    return executeGraph(
      args.graph,
      await resolveFileInputs(args, resolveFile, options.nodeMaxAttempts),
      {
        runIoRows: carry ? carry.wrap(runIoRows) : runIoRows,
        // D35: a node bigger than its run's concurrency can serve at once keeps its items in the store.
        isBig: (count) => count > 2 * options.concurrency,
        runStoredRows,
        fileRows,
        // D35: text, select and join take a stored list (patch `stored-list-nodes`), and batch
        // (`stored-list-batch`), each asked only when one meets such a node, so other runs record
        // no marker; a run from before keeps its refusal.
        pureNodesTakeStored: () => isPatched('stored-list-nodes'),
        batchTakesStored: () => isPatched('stored-list-batch'),
        // A text node's item past its bound fails (patch `text-bounds`), and a text node of a big
        // list fills it in blocks (`big-text-in-blocks`): each asked only when met, as above.
        boundsText: () => isPatched('text-bounds'),
        boundsTextWork: () => isPatched('text-work-bound'),
        boundsRunItems: () => isPatched('run-items-bound'),
        boundsInlineReads: () => isPatched('inline-reads-bound'),
        bigTextInBlocks: () => isPatched('big-text-in-blocks'),
        storedListReads: storedListReads(),
        onStoredList: (nodeId, list) => {
          state.reserveStored(nodeId, list.count);
          state.storedStarted(nodeId, 0, list.count);
          state.storedDone(nodeId, [[0, list.count]]);
        },
        onIterationStart: (nodeId, i) => state.iterationStarted(nodeId, i),
        onIterationDone: (nodeId, i, items) => state.iterationDone(nodeId, i, items),
        onNodeDone: () => progress.nodeDone(),
      },
    );
  };
}
