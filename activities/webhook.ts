/**
 * D20 webhook delivery: POST the run record (the JSON of GET /api/v1/runs/{id}), signed the
 * Standard Webhooks way with the account's secret, through the SSRF guard, following no
 * redirects. One call is one attempt; the webhook workflow's retry policy makes the 24 h of
 * backoff. Failures say whether retrying can help: a refused URL and 4xx answers (except 408
 * and 429) are final, everything else (3xx, 408, 429, 5xx, network errors) is retried.
 */
import { ApplicationFailure, log } from '@temporalio/activity';
import type { Config } from '../config';
import { UrlRefusedError, type GuardOptions, type StreamedBody } from '../lib/net/ssrf';
import { webhookSecret } from '../store/accounts';
import type { Collections } from '../store/db';
import { runView } from '../domain/run-view';
import { findRunWithoutLog } from '../store/runs';
import { isBigRun, runViewParts } from '../store/run-view-stream';
import {
  findDelivery,
  recordAttempt,
  recordGivenUp,
  type DeliveryRef,
} from '../store/webhook-deliveries';
import { postWebhook } from '../lib/webhooks/post';
import { signWebhook, signWebhookParts, type WebhookHeaders } from '../lib/webhooks/signature';
import { type WebhookArgs } from '../workflows/definitions';
import { webhookMessageId } from '../domain/run';

export interface WebhookDeps {
  collections: Pick<
    Collections,
    'runs' | 'runChunks' | 'itemBlocks' | 'accounts' | 'webhookDeliveries'
  >;
  /** Absent: https to public addresses only, 10 s per attempt (the production defaults). */
  webhooks?: Config['webhooks'];
  /** Host resolution for the guard (tests); the system resolver otherwise. */
  resolve?: GuardOptions['resolve'];
}

/** Delivery attempts one worker makes at once where WORKER_WEBHOOK_DELIVERIES is not configured (tests). */
export const DEFAULT_WORKER_WEBHOOK_DELIVERIES = 32;

/** Delivery attempts one worker process makes at once (worker/create-worker.ts, its webhook queue). */
export function workerWebhookSlots(webhooks?: { workerDeliveries?: number }): number {
  return webhooks?.workerDeliveries ?? DEFAULT_WORKER_WEBHOOK_DELIVERIES;
}

/** Answers that retrying cannot change: the receiver refuses this request for good. */
function isPermanent(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}

/** Where a URL points, for logs: never its path or query, which may carry the receiver's token. */
function origin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(not a URL)';
  }
}

function ref(args: WebhookArgs): DeliveryRef {
  return {
    id: webhookMessageId(args.runId),
    runId: args.runId,
    accountId: args.accountId,
    url: args.url,
  };
}

/** Builds the webhook activities: one delivery attempt, and recording that a delivery was given up. */
export function createWebhookActivities(deps: WebhookDeps) {
  const settings = deps.webhooks ?? {
    allowHttp: false,
    allowPrivateNetwork: false,
    timeoutMs: 10_000,
  };

  async function deliverWebhook(args: WebhookArgs): Promise<{ status: number }> {
    const delivery = ref(args);
    const payload = await deliveryPayload(deps.collections, args, delivery);
    // Signed per attempt: the timestamp is the attempt's, so receivers' replay windows accept retries.
    const { headers, body } = await signed(payload, delivery.id, Date.now() / 1000);
    const attempt: Attempt = { args, delivery, where: origin(args.url) };
    let answer: { status: number; answer: string };
    try {
      answer = await postWebhook(args.url, body, {
        allowHttp: settings.allowHttp,
        allowPrivate: settings.allowPrivateNetwork,
        resolve: deps.resolve,
        timeoutMs: settings.timeoutMs,
        headers: { ...headers },
      });
    } catch (err) {
      throw await notSent(deps.collections, attempt, err);
    }
    return answered(deps.collections, attempt, answer);
  }

  async function recordWebhookGivenUp(args: WebhookArgs & { error: string }): Promise<void> {
    log.warn('webhook given up', {
      runId: args.runId,
      webhookId: webhookMessageId(args.runId),
      origin: origin(args.url),
      error: args.error,
    });
    await recordGivenUp(deps.collections, ref(args), args.error);
  }

  return { deliverWebhook, recordWebhookGivenUp };
}

/** One delivery attempt, for its log lines and its record. */
interface Attempt {
  args: WebhookArgs;
  delivery: DeliveryRef;
  /** The URL's origin, for logs. */
  where: string;
}

/** What one attempt sends: the account's secret, and the body, or for a big run (D31) its parts. */
interface Payload {
  secret: string;
  body: string | (() => AsyncIterable<string>);
}

/**
 * The account's signing secret and the body to send; a run without a final record or account is
 * undeliverable. The body is the JSON of GET /api/v1/runs/{id}: a big run's is read from its
 * chunks and item blocks as it is sent, never whole in memory (a million rows' answers do not fit).
 */
async function deliveryPayload(
  collections: WebhookDeps['collections'],
  args: WebhookArgs,
  delivery: DeliveryRef,
): Promise<Payload> {
  const run = await findRunWithoutLog(collections, args.runId);
  if (!run?.finalized)
    throw ApplicationFailure.nonRetryable(
      `run ${args.runId} has no final record to deliver`,
      'WebhookUndeliverable',
    );
  const secret = await webhookSecret(collections, run.account_id);
  if (!secret)
    throw ApplicationFailure.nonRetryable(
      `account ${run.account_id} no longer exists`,
      'WebhookUndeliverable',
    );
  // The body shows the delivery as it stood before this attempt.
  const shown = await findDelivery(collections, delivery.id);
  return {
    secret,
    body: isBigRun(run)
      ? () => runViewParts(collections, run, shown)
      : JSON.stringify(runView(run, undefined, shown)),
  };
}

/** The signature headers and the body: a big run's is signed in a first pass over its parts and sent in a second. */
async function signed(
  payload: Payload,
  id: string,
  atSeconds: number,
): Promise<{ headers: WebhookHeaders; body: string | StreamedBody }> {
  const { secret, body } = payload;
  if (typeof body === 'string') return { headers: signWebhook(secret, id, atSeconds, body), body };
  const { headers, length } = await signWebhookParts(secret, id, atSeconds, body());
  return { headers, body: { length, parts: body } };
}

/** Records an attempt that got no answer and returns the failure to throw: final for a refused URL, retried otherwise. */
async function notSent(
  collections: WebhookDeps['collections'],
  { args, delivery, where }: Attempt,
  err: unknown,
): Promise<ApplicationFailure> {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof UrlRefusedError) {
    log.warn('webhook refused', {
      runId: args.runId,
      webhookId: delivery.id,
      origin: where,
      error: message,
    });
    await recordAttempt(collections, delivery, {
      status: 'pending',
      httpStatus: null,
      error: message,
    });
    return ApplicationFailure.nonRetryable(message, 'WebhookRefused');
  }
  const error = `${where} unreachable: ${message}`;
  log.info('webhook attempt failed', {
    runId: args.runId,
    webhookId: delivery.id,
    origin: where,
    error,
  });
  await recordAttempt(collections, delivery, {
    status: 'pending',
    httpStatus: null,
    error,
  });
  return ApplicationFailure.retryable(error, 'WebhookUnreachable');
}

/** Records an answered attempt: a 2xx delivers it; anything else fails it, for good when retrying cannot help. */
async function answered(
  collections: WebhookDeps['collections'],
  { args, delivery, where }: Attempt,
  answer: { status: number; answer: string },
): Promise<{ status: number }> {
  const { status } = answer;
  if (status >= 200 && status < 300) {
    log.info('webhook delivered', {
      runId: args.runId,
      webhookId: delivery.id,
      origin: where,
      status,
    });
    await recordAttempt(collections, delivery, {
      status: 'delivered',
      httpStatus: status,
      error: null,
    });
    return { status };
  }
  const error =
    status >= 300 && status < 400
      ? `${where} answered ${status}: redirects are not followed, the webhook URL must answer itself`
      : `${where} answered ${status}${answer.answer ? `: ${answer.answer.slice(0, 200)}` : ''}`;
  log.info('webhook attempt failed', {
    runId: args.runId,
    webhookId: delivery.id,
    origin: where,
    status,
  });
  await recordAttempt(collections, delivery, {
    status: 'pending',
    httpStatus: status,
    error,
  });
  if (isPermanent(status)) throw ApplicationFailure.nonRetryable(error, 'WebhookRejected');
  throw ApplicationFailure.retryable(error, 'WebhookFailed');
}
