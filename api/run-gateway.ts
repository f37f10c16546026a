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

export interface RunGatewayOptions {
  connection: Connection;
  namespace: string;
  taskQueue: string;
  /** Bound on every query: a slow answer is "no news yet", never a hung request. */
  queryTimeoutMs: number;
}

export class RunGateway {
  readonly client: Client;

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
   * The run's snapshot with the events after `afterSequence`, or null when Temporal has no news:
   * no worker has picked the run up yet, the query hit RESOURCE_EXHAUSTED while a workflow task
   * was in flight, it timed out, or Temporal has forgotten the run. Callers fall back to MongoDB.
   */
  async snapshot(runId: string, afterSequence = -1): Promise<RunSnapshot | null> {
    try {
      return await this.opts.connection.withDeadline(Date.now() + this.opts.queryTimeoutMs, () =>
        this.client.workflow.getHandle(runId).query(snapshotQuery, afterSequence),
      );
    } catch {
      return null;
    }
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
