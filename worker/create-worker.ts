/** The Temporal workers of a process: the workflow bundle plus the activities built from injected dependencies. */
import {
  NativeConnection,
  Worker,
  type InjectedSinks,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { Context } from '@temporalio/activity';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  makeWorkflowExporter,
  type OpenTelemetryWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkflowInfo } from '@temporalio/workflow';
import { createActivities, type ActivityDeps } from '../activities';
import { workerBlockSlots } from '../activities/node-block';
import { workerWebhookSlots } from '../activities/webhook';
import { blockTaskQueue, webhookTaskQueue } from '../workflows/definitions';
import { tracingResource, workflowSpanProcessor } from '../lib/observability/tracing';
import { countAttempts } from './metrics-interceptor';
import type { PayloadProtection } from '../lib/codec/data-converter';
import { TRACING_INTERCEPTORS } from './workflow-bundle';

export interface WorkerOptions extends ActivityDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** A prebuilt bundle (tests build it once; startWorker has one built in a child process); otherwise the workflows are bundled here. */
  workflowBundle?: Pick<WorkflowBundleWithSourceMap, 'code'>;
  /** A bundle file built with the image (tools/scripts/bundle-workflows.ts); production workers never bundle at start. */
  workflowBundlePath?: string;
  /** Time running activities get to finish on shutdown before they are cancelled. */
  shutdownGraceTimeMs?: number;
  /** Time after which a shutdown that has not finished is given up (the SDK throws; the process should exit). */
  shutdownForceTimeMs?: number;
  /** D32: the codec sealing every payload (lib/codec/data-converter.ts), the same as the API's. */
  payloads: PayloadProtection;
}

export { bundleWorkflows } from './workflow-bundle';

/**
 * Creates (but does not run) a process's three workers on one connection: the first polls the run
 * task queue (workflows and every activity), the second its block queue (D35, workflows/definitions.ts
 * blockTaskQueue) for only as many blocks as the process runs at once (WORKER_BLOCKS), so a block
 * waits in Temporal until a slot is free, and the third its webhook queue (D20, webhookTaskQueue)
 * for at most WORKER_WEBHOOK_DELIVERIES delivery attempts at once, so receivers that hold their
 * connections wait there too. All share one set of activities, hence one block scheduler (a run
 * started before the block queue still has its blocks on the run task queue, a delivery before the
 * webhook queue its attempts).
 */
export async function createRunWorkers(opts: WorkerOptions): Promise<Worker[]> {
  const activities = createActivities(opts);
  const shared = {
    connection: opts.connection,
    namespace: opts.namespace,
    dataConverter: opts.payloads.dataConverter,
    shutdownGraceTime: opts.shutdownGraceTimeMs ?? 30_000,
    ...(opts.shutdownForceTimeMs ? { shutdownForceTime: opts.shutdownForceTimeMs } : {}),
    // Heartbeats reach the server at most this late, so a cancel reaches a waiting activity within ~1 s.
    maxHeartbeatThrottleInterval: '1s',
  } as const;
  const activityInterceptors = [countAttempts, traceActivities];
  const runs = await Worker.create({
    ...shared,
    taskQueue: opts.taskQueue,
    ...workflowSource(opts),
    activities,
    interceptors: {
      activity: activityInterceptors,
      // Only when bundling at start: a prebuilt bundle carries them (bundleWorkflows), and the SDK
      // warns at every start that it ignores them beside one.
      ...(usesBundle(opts) ? {} : { workflowModules: [TRACING_INTERCEPTORS] }),
    },
    // The workflow sandbox's spans leave it through this sink (a no-op while tracing is off).
    sinks: { exporter: workflowSpanSink() },
  });
  // A queue of one activity's own, of which this process takes only `slots` at once: the rest wait in Temporal.
  const slotted = (taskQueue: string, only: Partial<typeof activities>, slots: number) =>
    Worker.create({
      ...shared,
      taskQueue,
      activities: only,
      interceptors: { activity: activityInterceptors },
      maxConcurrentActivityTaskExecutions: slots,
    });
  const blocks = await slotted(
    blockTaskQueue(opts.taskQueue),
    { runNodeBlock: activities.runNodeBlock },
    workerBlockSlots(opts.config.providerCalls),
  );
  const webhooks = await slotted(
    webhookTaskQueue(opts.taskQueue),
    { deliverWebhook: activities.deliverWebhook },
    workerWebhookSlots(opts.config.webhooks),
  );
  return [runs, blocks, webhooks];
}

/** A span per activity attempt, child of the workflow's (no-op while tracing is off). */
const traceActivities = (ctx: Context) => ({
  inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
  outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
});

/**
 * The SDK's sink copies the whole WorkflowInfo onto every workflow span: memo, search attributes
 * (the account), last result and failure. Only these identify a span and are kept; nothing a
 * customer wrote reaches a span.
 */
function workflowSpanSink(): InjectedSinks<{
  exporter: OpenTelemetryWorkflowExporter;
}>['exporter'] {
  const sink = makeWorkflowExporter(workflowSpanProcessor, tracingResource());
  return {
    export: {
      ...sink.export,
      fn: (info, spans) =>
        sink.export.fn(
          {
            workflowType: info.workflowType,
            workflowId: info.workflowId,
            runId: info.runId,
            taskQueue: info.taskQueue,
            namespace: info.namespace,
            attempt: info.attempt,
          } as WorkflowInfo,
          spans,
        ),
    },
  };
}

/** Whether the worker runs a bundle built before (in memory or a file) rather than bundling at start. */
const usesBundle = (opts: WorkerOptions) => !!(opts.workflowBundle || opts.workflowBundlePath);

function workflowSource(
  opts: WorkerOptions,
): Pick<Parameters<typeof Worker.create>[0], 'workflowBundle' | 'workflowsPath'> {
  if (opts.workflowBundle) return { workflowBundle: opts.workflowBundle };
  if (opts.workflowBundlePath) return { workflowBundle: { codePath: opts.workflowBundlePath } };
  return { workflowsPath: require.resolve('../workflows') };
}
