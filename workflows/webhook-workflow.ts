/**
 * D20: delivering a run's webhook, as a child workflow of the run that the run abandons when it
 * ends, so 24 hours of retries never hold the run open or fail it. Deterministic workflow code.
 */
import {
  ActivityFailure,
  ParentClosePolicy,
  WorkflowIdReusePolicy,
  log,
  proxyActivities,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { Activities } from '../activities';
import {
  DEFAULT_WEBHOOK_RETRY_INITIAL_MS,
  SEARCH_ATTRIBUTES,
  webhookTaskQueue,
  webhookWorkflowId,
  type RunArgs,
  type WebhookArgs,
} from './definitions';
import { priorityKey } from '../domain/run-priority';
import { WEBHOOK_DELIVERY_WINDOW_MS } from '../domain/run';
import { isPatched } from './patches';
import { PERSISTENCE_SUMMARIES, webhookWorkflowSummary } from './summaries';

/** D20, D36: every account's attempts wait at one priority, so on a fair queue accounts take turns. */
const DELIVERY_PRIORITY_KEY = priorityKey('normal');

/** Retries one delivery with exponential backoff for 24 h; returns whether it was delivered, never fails. */
export async function webhookWorkflow(
  args: WebhookArgs,
): Promise<{ delivered: boolean; error?: string }> {
  const { deliverWebhook } = proxyActivities<Activities>({
    summary: PERSISTENCE_SUMMARIES.deliverWebhook, // D33
    // Attempts wait for a worker's delivery slot in their own queue, never in the runs' slots.
    ...(isPatched('webhooks-queue')
      ? { taskQueue: webhookTaskQueue(workflowInfo().taskQueue) }
      : {}),
    // A server whose webhook queue orders by fairness (deploy/temporal-dynamicconfig.yaml) hands
    // the slots to accounts in turn: one tenant's receiver that holds its connections, with
    // hundreds of attempts waiting, delays another account's delivery by one attempt, not by all
    // of them. Normal priority for all: a run's claimed `high` must not put its deliveries first.
    ...(isPatched('webhooks-fair')
      ? { priority: { priorityKey: DELIVERY_PRIORITY_KEY, fairnessKey: args.accountId } }
      : {}),
    // One attempt: the HTTP timeout (WEBHOOK_TIMEOUT_MS, at most 50 s) plus reading the record.
    startToCloseTimeout: '60s',
    scheduleToCloseTimeout: WEBHOOK_DELIVERY_WINDOW_MS,
    retry: {
      initialInterval: args.retryInitialMs,
      backoffCoefficient: 2,
      maximumInterval: Math.max(args.retryInitialMs, 3_600_000),
    },
  });
  const { recordWebhookGivenUp } = proxyActivities<Activities>({
    summary: PERSISTENCE_SUMMARIES.recordWebhookGivenUp,
    startToCloseTimeout: '10s',
    retry: { initialInterval: 500, backoffCoefficient: 2, maximumInterval: 10_000 },
  });
  try {
    await deliverWebhook(args);
    return { delivered: true };
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    const error = failureMessage(err);
    log.warn('webhook not delivered', { runId: args.runId, error });
    await recordWebhookGivenUp({ ...args, error });
    return { delivered: false, error };
  }
}

/** The messages down a failure's cause chain ("activity timed out: <last attempt's error>"), without the activity wrapper. */
function failureMessage(err: ActivityFailure): string {
  const messages: string[] = [];
  for (
    let cause: Error | undefined = err.cause;
    cause && messages.length < 4;
    cause = (cause as { cause?: Error }).cause
  ) {
    if (cause.message) messages.push(cause.message);
  }
  return messages.join(': ') || err.message;
}

/** Starts the delivery of a run's webhook (once per run) and returns as soon as it has started. */
export async function startWebhookDelivery(args: RunArgs & { webhook: string }): Promise<void> {
  try {
    await startChild(webhookWorkflow, {
      workflowId: webhookWorkflowId(args.runId),
      staticSummary: webhookWorkflowSummary(args.runId), // D33
      args: [
        {
          runId: args.runId,
          accountId: args.accountId,
          url: args.webhook,
          retryInitialMs: args.options.webhookRetryInitialMs ?? DEFAULT_WEBHOOK_RETRY_INITIAL_MS,
        },
      ],
      // The run completes at once; the delivery goes on without it.
      parentClosePolicy: ParentClosePolicy.ABANDON,
      // One delivery per run, even if the run's workflow were reset and reached its end again.
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.accountId, value: args.accountId }],
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
}
