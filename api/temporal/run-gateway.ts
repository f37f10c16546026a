/** The API's window on Temporal: starting, cancelling, asking and awaiting a run's workflow (nothing else in the API holds a Temporal client). */
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import { randomUUID } from 'node:crypto';
import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  QueryRejectedError,
  WithStartWorkflowOperation,
  WorkflowUpdateStage,
  type GrpcRetryOptions,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { EncryptionCodec } from '../../lib/codec/payload-codec';
import type { PayloadProtection } from '../../lib/codec/data-converter';
import {
  RUN_WORKFLOW_TYPE,
  WEBHOOK_WORKFLOW_TYPE,
  SEARCH_ATTRIBUTES,
  SEARCH_ATTRIBUTE_TYPES,
  awaitEndUpdate,
  blockTaskQueue,
  webhookTaskQueue,
  snapshotQuery,
  outputPageQuery,
  webhookWorkflowId,
  type RunArgs,
  type WebhookArgs,
} from '../../workflows/definitions';
import { type OutputPage, type RunSnapshot, type SnapshotOptions } from '../../domain/run';
import {
  webhookWorkflowSummary,
  workflowDetails,
  workflowSummary,
} from '../../workflows/summaries';
import {
  DEADLINE_EXCEEDED,
  UNAVAILABLE,
  grpcCode,
  isNoWorker,
  isPayloadTooLarge,
  isTemporalUnavailable,
  isTemporalUnreachable,
  retryNamespaceMisses,
  TemporalNotConnectedError,
} from './grpc-errors';
import { ensureRetentionSchedule } from './retention-schedule';
import { InvalidRequestError, ServiceUnavailableError } from '../../domain/errors';
import { priorityKey, type RunPriority } from '../../domain/run-priority';
import { queryDuration } from '../../lib/metrics';
import type { Config } from '../../config';
import { connectTemporalWhenReachable } from '../../lib/temporal-start';

/**
 * D18: Temporal did not say whether a run's workflow started (the start's deadline passed, and so
 * did the check that asks), or the store whether the run's record was written (its connection
 * dropped). The run's record (if any) and hold are kept: a workflow that did start ends the run as
 * usual; one that did not is started by a retry with the same Idempotency-Key, or the run is ended
 * `failed` by a read once it is 15 minutes old (api/runs/settle-never-started.ts).
 */
export class RunStartUnsureError extends ServiceUnavailableError {
  constructor(
    readonly runId: string,
    why = 'the workflow service did not answer in time',
  ) {
    super(
      `Run ${runId} may have started: ${why}. Read it with GET /api/v1/runs/${runId}, or retry with the same Idempotency-Key: it never starts twice.`,
    );
  }
}

/**
 * 400 `run_too_large`: Temporal refused the run's start for its size. The start carries the graph
 * and the inputs (a default counted in both): a default of 1 MiB and an input of 1 MiB passed
 * its 2 MB, and each such start answered 500 (an alert's server error, at one a second).
 */
function startTooLarge(): InvalidRequestError {
  return new InvalidRequestError(
    "The run is too large to start: its workflow's graph and its inputs together pass the 2 MB the workflow service takes for a run's start (D31). Give large inputs as files (POST /api/v1/files) and their `file_...` ids, and keep large texts out of the graph's defaults.",
    { code: 'run_too_large', param: 'inputs' },
  );
}

export interface RunGatewayOptions {
  /**
   * The connection, when there is one already. The API listens before Temporal answers
   * (api/start-api.ts) and hands it over with `attach`; until then every call fails as in an outage.
   */
  connection?: Connection;
  namespace: string;
  taskQueue: string;
  /** Bound on every query: a slow answer is "no news yet", never a hung request. */
  queryTimeoutMs: number;
  /** Bound on a start or a cancel (a hung server; a refused connection fails within ~1 s, see connectTemporal). */
  rpcTimeoutMs: number;
  /**
   * Told about a run whose workflow closed without completing cleanly (terminated, timed out):
   * its own finalize never ran, so it settles the run (api/runs/settle-run.ts). Awaited before
   * the caller hears "no news".
   */
  onClosedUnfinished: (runId: string, status: number) => Promise<void>;
  /** D32: seals every payload the API sends to Temporal and opens every answer. */
  payloads: PayloadProtection;
  /**
   * Whether traces are exported (lib/observability/tracing.ts): only then does a start carry the
   * trace header, so with tracing off no plaintext header (even an empty one) enters a history.
   */
  traced?: boolean;
}

/**
 * Tries of a call that found Temporal unreachable: 3 retries after ~170, ~290 and ~490 ms, so a
 * restarting frontend or a reset connection is ridden out, yet a request answers 503 about 1 s
 * into an outage instead of after the SDK default's 10 tries (~20 s). Other retryable codes
 * (RESOURCE_EXHAUSTED ...) keep the SDK's policy.
 */
const UNAVAILABLE_ATTEMPTS = 4;

/**
 * While Temporal is down grpc-js reconnects with an exponential back-off that grows to 120 s;
 * capped at 2 s, the API notices a restarted server within ~2 s (one refused TCP connect every
 * 2 s costs nothing).
 */
const MAX_RECONNECT_BACKOFF_MS = 2_000;

/** The API's retry policy for Temporal calls (see UNAVAILABLE_ATTEMPTS). */
export function apiGrpcRetryOptions(): GrpcRetryOptions {
  const sdk = defaultGrpcRetryOptions();
  return {
    delayFunction: sdk.delayFunction,
    retryableDecider: (attempt, status) =>
      status.code === UNAVAILABLE
        ? attempt < UNAVAILABLE_ATTEMPTS
        : sdk.retryableDecider(attempt, status),
  };
}

/** Connects the API to Temporal with the outage behaviour above (answer 503 fast, recover by itself). */
export function connectTemporal(
  temporal: Config['temporal'],
  /** Told of each failed round while no frontend answers: the API's start waits for Temporal (lib/temporal-start.ts). */
  onWait: (err: unknown) => void,
  /** Ends the wait (a shutdown before Temporal answered). */
  signal?: AbortSignal,
): Promise<Connection> {
  return connectTemporalWhenReachable(
    temporal,
    (options) =>
      Connection.connect({
        ...options,
        channelArgs: { 'grpc.max_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS },
        interceptors: [makeGrpcRetryInterceptor(apiGrpcRetryOptions())],
      }),
    onWait,
    signal,
  );
}

/** One task queue's backlog by task type, as the server estimates it (operationalStats). */
export interface QueueBacklog {
  taskQueue: string;
  taskType: 'workflow' | 'activity';
  count: number;
  ageSeconds: number;
}

/** How a wait for a run's end ended: its terminal snapshot, the wait's signal first, or no update taken (see awaitEnd). */
export type RunEnd = RunSnapshot | 'aborted' | 'closed';

/** D28: a start whose caller waits for the run's end: the wait's deadline and signal, and once started, the end. */
export interface EndWait {
  readonly deadline: number;
  readonly signal: AbortSignal;
  /** The timeout inside `signal`, held here: AbortSignal.any holds it only weakly (lib/net/deadline.ts). */
  readonly timeout?: AbortSignal;
  /** Set by RunGateway.start when the start carried the wait; else the waiter asks with awaitEnd. */
  ended?: Promise<RunEnd>;
}

/** temporal.api.enums.v1.WorkflowExecutionStatus COMPLETED: the workflow returned (after finalizing its run). */
const WORKFLOW_COMPLETED = 2;

/** Every snapshot asked for compact (D35): a big run's log in a few answers; workflows from before answer `events`. */
const COMPACT: SnapshotOptions = { compact: true };

/** How many started run ids a process remembers (oldest forgotten first). */
const STARTED_MEMORY = 10_000;

/** The API's only way to Temporal: every call it makes, each under a deadline, each with one rule for its failures. */
export class RunGateway {
  /** The connection and its clients, once Temporal answered (see attach). */
  private link?: { connection: Connection; client: Client; replayClient: Client };
  /** The client's payload codec, also served to operators by the codec server (routes/codec.ts). */
  readonly codec?: EncryptionCodec;
  private readonly started = new Set<string>();
  /** This process's `awaitEnd` update id (see awaitEnd). */
  private readonly endWaitId = `awaitEnd-${randomUUID()}`;

  constructor(private readonly opts: RunGatewayOptions) {
    this.codec = opts.payloads.codec;
    if (opts.connection) this.attach(opts.connection);
  }

  /** From now on calls go to Temporal over `connection` (the API's start hands it over once Temporal answers). */
  attach(connection: Connection): void {
    const { opts } = this;
    this.link = {
      connection,
      // A query of a closed workflow is refused with its status instead of being answered by a
      // replay: a finished run's record answers at once (replaying a 100,000-row run's 35 MB history
      // took ~4 s per read), and a terminated run is told from a running one by that status.
      client: new Client({
        connection,
        namespace: opts.namespace,
        dataConverter: opts.payloads.dataConverter,
        workflow: { queryRejectCondition: 'NOT_OPEN' },
        // A span per start, cancel, query…; its context travels in the workflow's headers.
        interceptors: {
          workflow: opts.traced ? [new OpenTelemetryWorkflowClientInterceptor()] : [],
        },
      }),
      // Queries closed runs too (a worker replays them): for settling a run that could not finish.
      replayClient: new Client({
        connection,
        namespace: opts.namespace,
        dataConverter: opts.payloads.dataConverter,
      }),
    };
  }

  /** Whether a connection was attached (the API's start is past waiting for Temporal). */
  get attached(): boolean {
    return this.link !== undefined;
  }

  /** The connection; before one is attached a TemporalNotConnectedError, which callers meet as an outage. */
  private get connection(): Connection {
    if (!this.link) throw new TemporalNotConnectedError();
    return this.link.connection;
  }

  private get client(): Client {
    if (!this.link) throw new TemporalNotConnectedError();
    return this.link.client;
  }

  private get replayClient(): Client {
    if (!this.link) throw new TemporalNotConnectedError();
    return this.link.replayClient;
  }

  /**
   * The snapshot of a run whose workflow has closed, replayed from its history; null when it
   * cannot be had at all. One that cannot be had now (no worker replayed it in time, Temporal
   * unreachable) is a ServiceUnavailableError: settled then, the run was billed $0 for good
   * (a run of paid calls terminated while its workers were down, then read or deleted).
   * `ending`: with what the run keeps if it ends there (RunEnding; workflow code from before it
   * answers without).
   */
  closedSnapshot(
    runId: string,
    afterSequence: number,
    ending = false,
  ): Promise<RunSnapshot | null> {
    const options: SnapshotOptions = ending ? { ...COMPACT, ending } : COMPACT;
    return this.replayQuery(runId, (handle) => handle.query(snapshotQuery, afterSequence, options));
  }

  /** One page of a closed run's output `label` as its workflow held it (outputPage), replayed as closedSnapshot is. */
  closedOutputPage(
    runId: string,
    label: string,
    afterItemId: string | null,
    limit: number,
  ): Promise<OutputPage | null> {
    return this.replayQuery(runId, (handle) =>
      handle.query(outputPageQuery, label, afterItemId, limit),
    );
  }

  /** A query of a closed workflow, answered by a replay (see closedSnapshot). */
  private async replayQuery<T>(
    runId: string,
    ask: (handle: WorkflowHandle) => Promise<T>,
  ): Promise<T | null> {
    try {
      return await this.connection.withDeadline(Date.now() + 30_000, () =>
        ask(this.replayClient.workflow.getHandle(runId)),
      );
    } catch (err) {
      if (isTemporalUnavailable(err) || isNoWorker(err))
        throw new ServiceUnavailableError(
          'The run cannot be replayed right now to count what it ran; retry shortly.',
        );
      return null;
    }
  }

  /** When the run's workflow closed, by Temporal's clock; null when it cannot be told (open, unknown, no answer). */
  async closedAt(runId: string): Promise<Date | null> {
    try {
      const description = await this.connection.withDeadline(
        Date.now() + this.opts.queryTimeoutMs,
        () => this.client.workflow.getHandle(runId).describe(),
      );
      return description.closeTime ?? null;
    } catch {
      return null;
    }
  }

  /**
   * D20: starts the webhook delivery of a run whose workflow closed before it could (settled by the
   * API, api/runs/settle-run.ts), as the run would have: one per run, a second start is a no-op.
   */
  async startWebhookDelivery(args: WebhookArgs): Promise<void> {
    try {
      await this.withDeadline(() =>
        this.client.workflow.start(WEBHOOK_WORKFLOW_TYPE, {
          workflowId: webhookWorkflowId(args.runId),
          taskQueue: this.opts.taskQueue,
          args: [args],
          staticSummary: webhookWorkflowSummary(args.runId), // D33
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.accountId, value: args.accountId }],
        }),
      );
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return;
      throw err;
    }
  }

  /**
   * Starts the run's workflow; the workflow id is the run id, so a retry can never start a second one.
   * `slug` names the published workflow in the run's summary in the Temporal UI (D33); `priority` is the run's D36 priority.
   * With `wait` (D28 `Prefer: wait`) the start carries the run's `awaitEnd` update (see startAwaited)
   * and sets `wait.ended`.
   */
  async start(
    args: RunArgs,
    slug: string,
    priority: RunPriority = 'normal',
    wait?: EndWait,
  ): Promise<void> {
    const options = {
      workflowId: args.runId,
      taskQueue: this.opts.taskQueue,
      args: [args],
      staticSummary: workflowSummary(slug, args.version),
      staticDetails: workflowDetails(args.graph.nodes),
      // D36: activities inherit it; the worker's call scheduler orders an account's waiting calls by
      // the key, and a Temporal server with fairness enabled also orders and shares its queue by them.
      priority: { priorityKey: priorityKey(priority), fairnessKey: args.accountId },
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.accountId, value: args.accountId },
        { key: SEARCH_ATTRIBUTES.publishedWorkflowId, value: args.publishedWorkflowId },
        { key: SEARCH_ATTRIBUTES.workflowVersion, value: args.version },
      ],
    } satisfies WorkflowStartOptions;
    try {
      await retryNamespaceMisses(async () => {
        if (wait) await this.startAwaited(options, wait);
        else await this.withDeadline(() => this.client.workflow.start(RUN_WORKFLOW_TYPE, options));
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return;
      // A deadline, or a wait over before Temporal answered, leaves it open whether the start reached
      // Temporal. The caller removes the run's record on failure, so a workflow that did start would
      // run (and be billed) unseen, its hold given back twice: ask first, and when that cannot be
      // told either, say so (the caller then keeps the record and its hold).
      const unsure = wait?.signal.aborted || grpcCode(err) === DEADLINE_EXCEEDED;
      if (unsure) {
        const started = await this.exists(args.runId).catch(() => undefined);
        if (started) return;
        if (started === undefined && !wait?.signal.aborted)
          throw new RunStartUnsureError(args.runId);
      }
      if (isTemporalUnavailable(err)) throw new ServiceUnavailableError();
      // Refused for its size, which a retry does not change: the caller's 400, not a 500 of ours.
      if (isPayloadTooLarge(err)) throw startTooLarge();
      // The wait is over and the workflow is not there: an ordinary start, under its own deadline.
      if (wait?.signal.aborted) return this.start(args, slug, priority);
      throw err;
    }
  }

  /**
   * D28: the start and the run's `awaitEnd` update in one call (update-with-start), so the update
   * is in the run's first workflow task and a run that ends in it is answered with it. Sent apart,
   * the update reached Temporal while that task ran, and a workflow that closed in it left the
   * update unanswered: the wait then read the closed run back (tools/bench/FINDINGS.md P2). Resolves
   * once Temporal has the workflow (its first answer, which comes when the update is accepted or its
   * long poll ends); `wait.ended` resolves with the run's end.
   */
  private async startAwaited(options: WorkflowStartOptions, wait: EndWait): Promise<void> {
    const operation = new WithStartWorkflowOperation(RUN_WORKFLOW_TYPE, {
      ...options,
      // A run id is new when its record is written: a workflow with the id is a retry of this start.
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
    const update = this.connection.withAbortSignal(wait.signal, () =>
      this.client.workflow.startUpdateWithStart(awaitEndUpdate, {
        updateId: this.endWaitId,
        waitForStage: WorkflowUpdateStage.ACCEPTED,
        startWorkflowOperation: operation,
      }),
    );
    wait.ended = this.endOf(
      update.then((handle) => this.connection.withAbortSignal(wait.signal, () => handle.result())),
      wait.signal,
    );
    await operation.workflowHandle();
  }

  /** Whether Temporal knows a workflow with this id; 503 (ServiceUnavailableError) when it cannot say. */
  async exists(runId: string): Promise<boolean> {
    try {
      await this.connection.withDeadline(Date.now() + this.opts.queryTimeoutMs, () =>
        this.client.workflow.getHandle(runId).describe(),
      );
      return true;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      if (isTemporalUnavailable(err)) throw new ServiceUnavailableError();
      throw err;
    }
  }

  /** Answers when Temporal's frontend answers within `ms` (readiness, /readyz); throws otherwise. */
  async ping(ms: number): Promise<void> {
    await this.connection.withDeadline(Date.now() + ms, () =>
      this.connection.workflowService.getSystemInfo({}),
    );
  }

  /**
   * What monitoring needs from the server side (api/routes/metrics.ts): the approximate backlog
   * (count, and age of its oldest task) of the run task queue per task type, of its block queue
   * (D35, blocks waiting for a worker's block slot) and of its webhook queue (D20, delivery
   * attempts waiting for a worker's delivery slot), and how many run workflows are still open
   * though started before `openBefore`. The calls go at once, each bounded by `ms`.
   */
  async operationalStats(
    ms: number,
    openBefore: Date,
  ): Promise<{
    backlog: QueueBacklog[];
    openPastTimeout: number;
  }> {
    const deadline = Date.now() + ms;
    // Taken first: with no connection yet this call fails before any of its calls is sent.
    const { connection, client } = this;
    const describe = async (
      taskType: 'workflow' | 'activity',
      taskQueue = this.opts.taskQueue,
    ): Promise<QueueBacklog> => {
      const res = await connection.withDeadline(deadline, () =>
        connection.workflowService.describeTaskQueue({
          namespace: this.opts.namespace,
          taskQueue: { name: taskQueue, kind: 1 /* NORMAL */ },
          taskQueueType: taskType === 'workflow' ? 1 : 2,
          reportStats: true,
        }),
      );
      const age = res.stats?.approximateBacklogAge;
      return {
        taskQueue,
        taskType,
        count: Number(res.stats?.approximateBacklogCount ?? 0),
        ageSeconds: Number(age?.seconds ?? 0) + (age?.nanos ?? 0) / 1e9,
      };
    };
    const [workflow, activity, blocks, webhooks, open] = await Promise.all([
      describe('workflow'),
      describe('activity'),
      describe('activity', blockTaskQueue(this.opts.taskQueue)),
      describe('activity', webhookTaskQueue(this.opts.taskQueue)),
      connection.withDeadline(deadline, () =>
        client.workflow.count(
          `WorkflowType = '${RUN_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND StartTime < '${openBefore.toISOString()}'`,
        ),
      ),
    ]);
    return { backlog: [workflow, activity, blocks, webhooks], openPastTimeout: open.count };
  }

  /** D29: creates the hourly retention schedule of this task queue unless it exists; returns its id. */
  ensureRetentionSchedule(): Promise<string> {
    return this.withDeadline(() => ensureRetentionSchedule(this.client, this.opts.taskQueue));
  }

  /**
   * The run's terminal snapshot (its last events included) the moment it ends, before its record
   * is written: the `awaitEnd` update. `aborted` when `signal` fired first; `closed` when the
   * workflow cannot take the update (it closed already, or Temporal forgot it, or refused it).
   * Every wait of this process on one run is the same update (one id per process), which Temporal
   * deduplicates: however many `Prefer: wait` starts and stream pollers wait, the run holds one
   * update per API process, far below Temporal's limit of updates in flight per workflow.
   */
  async awaitEnd(runId: string, signal: AbortSignal): Promise<RunEnd> {
    // In a promise's callback, so that no connection yet is a refused update ('closed') as in an outage.
    const update = Promise.resolve().then(() =>
      this.connection.withAbortSignal(signal, () =>
        this.client.workflow
          .getHandle(runId)
          .executeUpdate(awaitEndUpdate, { updateId: this.endWaitId }),
      ),
    );
    return this.endOf(update, signal);
  }

  /** An `awaitEnd` update's answer as a RunEnd: 'aborted' at the signal, 'closed' when refused. */
  private endOf(update: Promise<RunSnapshot>, signal: AbortSignal): Promise<RunEnd> {
    const answered = update.catch(() =>
      signal.aborted ? ('aborted' as const) : ('closed' as const),
    );
    // The wait ends at the signal even where the SDK's call lingers (an update retried under load
    // was seen to outlive its abort by over 20 s): the caller's answer never waits past its deadline.
    const aborted = new Promise<'aborted'>((resolve) => {
      if (signal.aborted) resolve('aborted');
      else signal.addEventListener('abort', () => resolve('aborted'), { once: true });
    });
    return Promise.race([answered, aborted]);
  }

  /**
   * Waits up to `ms` for the run's workflow to close (a long poll on Temporal, no polling here);
   * true when it did. The workflow closes only after its final record is written.
   */
  async waitForClose(runId: string, ms: number): Promise<boolean> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), ms);
    try {
      await this.connection.withAbortSignal(controller.signal, () =>
        this.client.workflow.getHandle(runId).result(),
      );
      return true;
    } catch {
      return false; // the wait is over (runs that fail or are cancelled still return normally)
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * D39: ends a workflow at once (a live run being deleted that did not stop when cancelled, or
   * its webhook child); a workflow that is closed or unknown is left as it is.
   */
  async terminate(workflowId: string, reason: string): Promise<void> {
    try {
      await this.withDeadline(() => this.client.workflow.getHandle(workflowId).terminate(reason));
    } catch (err) {
      if (isTemporalUnavailable(err)) throw new ServiceUnavailableError();
      // Already closed or forgotten: nothing left to end.
    }
  }

  /**
   * D39: asks Temporal to delete a closed workflow's execution (history and visibility), so a
   * deleted run leaves no trace in the UI. Asynchronous on Temporal's side and not reaching
   * archives, so only tidiness: the run's destroyed key is what makes its history unreadable.
   * Best effort: failures are ignored (retention removes the history within a day anyway).
   */
  async deleteExecution(workflowId: string): Promise<void> {
    await this.withDeadline(() =>
      this.connection.workflowService.deleteWorkflowExecution({
        namespace: this.opts.namespace,
        workflowExecution: { workflowId },
      }),
    ).catch(() => undefined);
  }

  /** Requests cancellation (D8); a run that has just ended is left as it is (the caller re-reads it). */
  async cancel(runId: string): Promise<void> {
    try {
      await this.withDeadline(() => this.client.workflow.getHandle(runId).cancel());
    } catch (err) {
      if (isTemporalUnavailable(err)) throw new ServiceUnavailableError();
      // Already closed or forgotten: nothing left to cancel.
    }
  }

  /**
   * The run's snapshot with the events after `afterSequence`, or null when Temporal has no news:
   * no worker has picked the run up yet, the query hit RESOURCE_EXHAUSTED while a workflow task
   * was in flight, it timed out, or Temporal has forgotten the run. Callers fall back to MongoDB.
   * Throws ServiceUnavailableError when Temporal cannot be reached at all: the stored record of a
   * live run says only `pending`, and serving it would move a running run back.
   */
  async snapshot(runId: string, afterSequence = -1): Promise<RunSnapshot | null> {
    return (await this.probe(runId, afterSequence)).snapshot;
  }

  /**
   * snapshot(), and when there is none why: `queued`, Temporal holds the workflow but no worker
   * has run its first task yet (so the run is `pending`); `unanswered`, Temporal did not say where
   * the run stands (its query or describe timed out or failed, as in the seconds after a Temporal
   * restart), so its state is unknown, not the stored record's `pending`; `closed`, the workflow
   * has closed (one that did not complete was settled, or its settle tried, before this answers).
   */
  async probe(
    runId: string,
    afterSequence = -1,
  ): Promise<{
    snapshot: RunSnapshot | null;
    queued: boolean;
    unanswered: boolean;
    missing: boolean;
    closed: boolean;
  }> {
    const { answer, queued, unanswered, missing, closed } = await this.query(runId, (handle) =>
      handle.query(snapshotQuery, afterSequence, COMPACT),
    );
    return { snapshot: answer ? answer.value : null, queued, unanswered, missing, closed };
  }

  /**
   * D31: one page of a live run's output `label`; `{value: null}` for a label the run does not
   * have, null when Temporal has no news (as for snapshot).
   */
  async outputPage(
    runId: string,
    label: string,
    afterItemId: string | null,
    limit: number,
  ): Promise<{ value: OutputPage | null } | null> {
    return (
      await this.query(runId, (handle) => handle.query(outputPageQuery, label, afterItemId, limit))
    ).answer;
  }

  /** One query of a started run under the query deadline; no answer for "no news", 503 when Temporal is unreachable. */
  private async query<T>(
    runId: string,
    ask: (handle: WorkflowHandle) => Promise<T>,
  ): Promise<{
    answer: { value: T } | null;
    queued: boolean;
    unanswered: boolean;
    missing: boolean;
    closed: boolean;
  }> {
    const stop = queryDuration.startTimer();
    let answer: { value: T } | null = null;
    let queued = false;
    let unanswered = true; // until Temporal says the run is queued or closed, or answers
    let missing = false;
    let closed = false;
    try {
      const { state, status } = await this.startState(runId);
      queued = state === 'queued';
      missing = state === 'missing';
      closed = state === 'closed';
      if (state === 'queued' || state === 'closed') unanswered = false;
      if (status !== undefined) await this.settleUnfinished(runId, status);
      if (state === 'started') {
        const value = await this.connection.withDeadline(
          Date.now() + this.opts.queryTimeoutMs,
          () => ask(this.client.workflow.getHandle(runId)),
        );
        answer = { value };
        unanswered = false;
      }
    } catch (err) {
      // Closed. A not-found stays unanswered: a stream then serves the record only once it is final.
      if (err instanceof QueryRejectedError) unanswered = false;
      if (err instanceof QueryRejectedError) closed = true;
      if (isTemporalUnreachable(err)) {
        stop({ outcome: 'unavailable' });
        throw new ServiceUnavailableError();
      }
      if (err instanceof QueryRejectedError) await this.settleUnfinished(runId, err.status);
      // RESOURCE_EXHAUSTED, a deadline, a forgotten run, a settled run: all "no news yet" (read the record)
    }
    stop({ outcome: answer ? 'ok' : 'no_news' });
    return { answer, queued, unanswered, missing, closed };
  }

  /** Runs one start or cancel call under the configured deadline (async: no connection yet rejects). */
  private async withDeadline<T>(call: () => Promise<T>): Promise<T> {
    return this.connection.withDeadline(Date.now() + this.opts.rpcTimeoutMs, call);
  }

  /** Closed: completed workflows finalized their run themselves; any other end needs settling. */
  private async settleUnfinished(runId: string, status: number): Promise<void> {
    if (status !== WORKFLOW_COMPLETED) await this.settle(runId, status).catch(() => undefined);
  }

  /** Settles a run whose workflow closed with `status` without finalizing (onClosedUnfinished); rejects as it does. */
  settle(runId: string, status: number): Promise<void> {
    return this.opts.onClosedUnfinished(runId, status);
  }

  /**
   * Whether a worker has completed the run's first workflow task. Until then a query waits for a
   * worker until its deadline, so every poll of a queued run would hang that long; a describe
   * answers at once. Once started, always started: remembered so live runs cost one call a look.
   * A describe that finds the workflow closed says so with its status: no query follows, which
   * Temporal would only refuse (the first read of a run that ended unwatched: one call, not two).
   * A run remembered started is never `missing`, so this process never settles it as a start
   * that died (store/never-started.ts): its execution deleted by an operator while it ran is no
   * news here.
   */
  private async startState(
    runId: string,
  ): Promise<{ state: 'started' | 'queued' | 'closed' | 'missing' | 'unknown'; status?: number }> {
    if (this.started.has(runId)) return { state: 'started' };
    try {
      const description = await this.connection.withDeadline(
        Date.now() + this.opts.queryTimeoutMs,
        () => this.client.workflow.getHandle(runId).describe(),
      );
      if (description.status.name !== 'RUNNING')
        return { state: 'closed', status: description.status.code };
      // Execution started, task scheduled, task started, task completed: at least four events.
      if (description.historyLength < 4) return { state: 'queued' };
    } catch (err) {
      if (isTemporalUnreachable(err)) throw err; // probe() turns it into a 503
      // Never started, or closed and forgotten: the stored record is the answer (read-run.ts).
      if (err instanceof WorkflowNotFoundError) return { state: 'missing' };
      return { state: 'unknown' }; // Temporal cannot say: the stored record is the answer
    }
    if (this.started.size >= STARTED_MEMORY)
      this.started.delete(this.started.values().next().value!);
    this.started.add(runId);
    return { state: 'started' };
  }
}

/** Registers the search attributes on a Temporal server that lacks them (a dev server gets them by flag). */
export async function ensureSearchAttributes(
  connection: Connection,
  namespace: string,
): Promise<void> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = Object.entries(SEARCH_ATTRIBUTE_TYPES).filter(
    ([name]) => !(name in (existing.customAttributes ?? {})),
  );
  if (missing.length === 0) return;
  const types = { Keyword: 2, Int: 3 } as const; // temporal.api.enums.v1.IndexedValueType
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, types[type]])),
  });
}
