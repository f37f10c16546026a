/** The API's window on Temporal: starting a run's workflow and asking it for its snapshot. */
import { Client, Connection, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import {
  RUN_WORKFLOW_TYPE,
  SEARCH_ATTRIBUTES,
  SEARCH_ATTRIBUTE_TYPES,
  snapshotQuery,
  type RunArgs,
  type RunSnapshot,
} from '../workflows/definitions';
import { isTemporalUnavailable } from './middleware/error-handler';
import { ServiceUnavailableError } from './errors';
import { queryDuration } from '../metrics';

export interface RunGatewayOptions {
  connection: Connection;
  namespace: string;
  taskQueue: string;
  /** Bound on every query: a slow answer is "no news yet", never a hung request. */
  queryTimeoutMs: number;
}

/** How many started run ids a process remembers (oldest forgotten first). */
const STARTED_MEMORY = 10_000;

export class RunGateway {
  readonly client: Client;
  private readonly started = new Set<string>();

  constructor(private readonly opts: RunGatewayOptions) {
    this.client = new Client({ connection: opts.connection, namespace: opts.namespace });
  }

  /** Starts the run's workflow; the workflow id is the run id, so a retry can never start a second one. */
  async start(args: RunArgs): Promise<void> {
    try {
      await this.client.workflow.start(RUN_WORKFLOW_TYPE, {
        workflowId: args.runId,
        taskQueue: this.opts.taskQueue,
        args: [args],
        typedSearchAttributes: [
          { key: SEARCH_ATTRIBUTES.accountId, value: args.accountId },
          { key: SEARCH_ATTRIBUTES.publishedWorkflowId, value: args.publishedWorkflowId },
          { key: SEARCH_ATTRIBUTES.workflowVersion, value: args.version },
        ],
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return;
      if (isTemporalUnavailable(err)) throw new ServiceUnavailableError();
      throw err;
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
      await this.client.workflow.getHandle(runId).cancel();
    } catch (err) {
      if (isTemporalUnavailable(err)) throw new ServiceUnavailableError();
      // Already closed or forgotten: nothing left to cancel.
    }
  }

  /**
   * The run's snapshot with the events after `afterSequence`, or null when Temporal has no news:
   * no worker has picked the run up yet, the query hit RESOURCE_EXHAUSTED while a workflow task
   * was in flight, it timed out, or Temporal has forgotten the run. Callers fall back to MongoDB.
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
    } catch {
      // RESOURCE_EXHAUSTED, a deadline, a forgotten run: all "no news yet"
    }
    stop({ outcome: snapshot ? 'ok' : 'no_news' });
    return snapshot;
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
    } catch {
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
