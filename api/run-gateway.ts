/** The API's window on Temporal: starting a run's workflow and asking it for its snapshot. */
import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  defaultGrpcRetryOptions,
  isGrpcServiceError,
  makeGrpcRetryInterceptor,
  ServiceError,
  type GrpcRetryOptions,
} from '@temporalio/client';
import type { EncryptionCodec } from '../codec/payload-codec';
import type { PayloadProtection } from '../codec/data-converter';
import {
  RUN_WORKFLOW_TYPE,
  SEARCH_ATTRIBUTES,
  SEARCH_ATTRIBUTE_TYPES,
  snapshotQuery,
  type RunArgs,
  type RunSnapshot,
} from '../workflows/definitions';
import { workflowDetails, workflowSummary } from '../workflows/summaries';
import { isTemporalUnavailable } from './middleware/error-handler';
import { ServiceUnavailableError } from './errors';
import { queryDuration } from '../metrics';

export interface RunGatewayOptions {
  connection: Connection;
  namespace: string;
  taskQueue: string;
  /** Bound on every query: a slow answer is "no news yet", never a hung request. */
  queryTimeoutMs: number;
  /** Bound on a start or a cancel (a hung server; a refused connection fails within ~1 s, see connectTemporal). */
  rpcTimeoutMs: number;
  /** D32: seals every payload the API sends to Temporal and opens every answer. */
  payloads: PayloadProtection;
}

/** gRPC status UNAVAILABLE: the server cannot be reached (refused, reset, not resolvable). */
const UNAVAILABLE = 14;
/** gRPC status DEADLINE_EXCEEDED: no answer in time (the call may or may not have taken effect). */
const DEADLINE_EXCEEDED = 4;

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
      status.code === UNAVAILABLE ? attempt < UNAVAILABLE_ATTEMPTS : sdk.retryableDecider(attempt, status),
  };
}

/** Connects the API to Temporal with the outage behaviour above (issue 8: answer 503 fast, recover by itself). */
export function connectTemporal(address: string): Promise<Connection> {
  return Connection.connect({
    address,
    channelArgs: { 'grpc.max_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS },
    interceptors: [makeGrpcRetryInterceptor(apiGrpcRetryOptions())],
  });
}

/** The gRPC status code of a failed Temporal call, bare or wrapped in the SDK's ServiceError. */
function grpcCode(err: unknown): number | undefined {
  const grpc = isGrpcServiceError(err) ? err : err instanceof ServiceError && isGrpcServiceError(err.cause) ? err.cause : undefined;
  return grpc?.code;
}

/** True when a Temporal call failed because the server could not be reached (not because it was slow or said no). */
export function isTemporalUnreachable(err: unknown): boolean {
  return grpcCode(err) === UNAVAILABLE;
}

/** How many started run ids a process remembers (oldest forgotten first). */
const STARTED_MEMORY = 10_000;

export class RunGateway {
  readonly client: Client;
  /** The client's payload codec, also served to operators by the codec server (routes/codec.ts). */
  readonly codec?: EncryptionCodec;
  private readonly started = new Set<string>();

  constructor(private readonly opts: RunGatewayOptions) {
    this.codec = opts.payloads.codec;
    this.client = new Client({ connection: opts.connection, namespace: opts.namespace, dataConverter: opts.payloads.dataConverter });
  }

  /**
   * Starts the run's workflow; the workflow id is the run id, so a retry can never start a second one.
   * `slug` names the published workflow in the run's summary in the Temporal UI (D33).
   */
  async start(args: RunArgs, slug: string): Promise<void> {
    try {
      await this.withDeadline(() => this.client.workflow.start(RUN_WORKFLOW_TYPE, {
        workflowId: args.runId,
        taskQueue: this.opts.taskQueue,
        args: [args],
        staticSummary: workflowSummary(slug, args.version),
        staticDetails: workflowDetails(args.graph.nodes),
        typedSearchAttributes: [
          { key: SEARCH_ATTRIBUTES.accountId, value: args.accountId },
          { key: SEARCH_ATTRIBUTES.publishedWorkflowId, value: args.publishedWorkflowId },
          { key: SEARCH_ATTRIBUTES.workflowVersion, value: args.version },
        ],
      }));
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return;
      // A deadline leaves it open whether the start reached Temporal. The caller removes the run's
      // record on failure, so a workflow that did start would run (and be billed) unseen: ask first.
      if (grpcCode(err) === DEADLINE_EXCEEDED && (await this.exists(args.runId))) return;
      if (isTemporalUnavailable(err)) throw new ServiceUnavailableError();
      throw err;
    }
  }

  /** Whether Temporal knows a workflow with this id (false when it cannot say). */
  private async exists(runId: string): Promise<boolean> {
    try {
      await this.opts.connection.withDeadline(Date.now() + this.opts.queryTimeoutMs, () => this.client.workflow.getHandle(runId).describe());
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Waits up to `ms` for the run's workflow to close (a long poll on Temporal, no polling here);
   * true when it did. The workflow closes only after its final record is written.
   */
  async waitForEnd(runId: string, ms: number): Promise<boolean> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), ms);
    try {
      await this.opts.connection.withAbortSignal(controller.signal, () => this.client.workflow.getHandle(runId).result());
      return true;
    } catch {
      return false; // the wait is over (runs that fail or are cancelled still return normally)
    } finally {
      clearTimeout(timer);
    }
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
   * live run says only `pending`, and serving it would move a running run back (issue 8).
   */
  async snapshot(runId: string, afterSequence = -1): Promise<RunSnapshot | null> {
    const stop = queryDuration.startTimer();
    let snapshot: RunSnapshot | null = null;
    try {
      if (await this.hasStarted(runId)) {
        snapshot = await this.opts.connection.withDeadline(Date.now() + this.opts.queryTimeoutMs, () =>
          this.client.workflow.getHandle(runId).query(snapshotQuery, afterSequence),
        );
      }
    } catch (err) {
      if (isTemporalUnreachable(err)) {
        stop({ outcome: 'unavailable' });
        throw new ServiceUnavailableError();
      }
      // RESOURCE_EXHAUSTED, a deadline, a forgotten run: all "no news yet"
    }
    stop({ outcome: snapshot ? 'ok' : 'no_news' });
    return snapshot;
  }

  /** Runs one start or cancel call under the configured deadline. */
  private withDeadline<T>(call: () => Promise<T>): Promise<T> {
    return this.opts.connection.withDeadline(Date.now() + this.opts.rpcTimeoutMs, call);
  }

  /**
   * Whether a worker has completed the run's first workflow task. Until then a query waits for a
   * worker until its deadline, so every poll of a queued run would hang that long; a describe
   * answers at once. Once started, always started: remembered so live runs cost one call a look.
   */
  private async hasStarted(runId: string): Promise<boolean> {
    if (this.started.has(runId)) return true;
    try {
      const description = await this.opts.connection.withDeadline(Date.now() + this.opts.queryTimeoutMs, () =>
        this.client.workflow.getHandle(runId).describe(),
      );
      // Execution started, task scheduled, task started, task completed: at least four events.
      if (description.historyLength < 4) return false;
    } catch (err) {
      if (isTemporalUnreachable(err)) throw err; // snapshot() turns it into a 503
      return false; // Temporal cannot say (or forgot the run): the stored record is the answer
    }
    if (this.started.size >= STARTED_MEMORY) this.started.delete(this.started.values().next().value!);
    this.started.add(runId);
    return true;
  }
}

/** Registers the search attributes on a Temporal server that lacks them (a dev server gets them by flag). */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = Object.entries(SEARCH_ATTRIBUTE_TYPES).filter(([name]) => !(name in (existing.customAttributes ?? {})));
  if (missing.length === 0) return;
  const types = { Keyword: 2, Int: 3 } as const; // temporal.api.enums.v1.IndexedValueType
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, types[type]])),
  });
}
