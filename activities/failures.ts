/**
 * How provider answers become Temporal failures (docs/workflow-format.md "Providers"): 408, 429 and 5xx are
 * transient and retried with backoff; any other 4xx is the provider refusing this item, which
 * no retry can fix, so it fails the item at once with the provider's own message.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { ApplicationFailureOptions } from '@temporalio/common';
import { parseJsonWithin } from '../domain/json-depth';

/** True for statuses worth retrying. */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * The failure for a non-2xx provider answer. A transient one keeps the answer's `Retry-After`
 * (as `retryAfterMs` in its details), which a big node's row waits for before its next call
 * (activities/row-retries.ts).
 */
export function providerFailure(
  provider: string,
  status: number,
  message: string,
  retryAfter?: string | string[],
): ApplicationFailure {
  const text = `${provider} answered ${status}: ${message}`;
  if (!isTransientStatus(status))
    return ApplicationFailure.nonRetryable(text, 'ProviderRejected', { status });
  const wait = retryAfterMs(retryAfter);
  return ApplicationFailure.retryable(text, 'ProviderUnavailable', {
    status,
    ...(wait !== undefined && { retryAfterMs: wait }),
  });
}

/**
 * A `Retry-After` header's wait in ms: a non-negative number of seconds, or an HTTP-date (0 when
 * past). Anything else (absent, several values, not a date) is none.
 */
export function retryAfterMs(
  header: string | string[] | undefined,
  now = Date.now(),
): number | undefined {
  if (typeof header !== 'string') return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = /[a-z]/i.test(value) ? Date.parse(value) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The wait a transient provider failure asked for (`Retry-After`, providerFailure), if any. */
export function askedWaitMs(err: unknown): number | undefined {
  if (!(err instanceof ApplicationFailure)) return undefined;
  const wait = (err.details?.[0] as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
  return typeof wait === 'number' && Number.isFinite(wait) && wait >= 0 ? wait : undefined;
}

/** A node whose configuration cannot work on this service (unknown provider, missing model price is not one). */
export function invalidNodeConfig(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, 'InvalidNodeConfig');
}

/**
 * A provider's own words as an item's error keeps them (an error body, a refusal, a prediction's
 * error): the first 500 characters, however much it sent.
 */
export function providerWords(text: string): string {
  return text.slice(0, 500);
}

/** Pulls a human message out of a provider's JSON or text error body: its first 500 characters. */
export function errorMessage(body: string): string {
  return providerWords(messageIn(body)) || 'no message';
}

function messageIn(body: string): string {
  try {
    // Bounded as a success's JSON: a 16 MiB error body of `[{},…]` took 373 MB of heap to parse.
    const parsed = parseJsonWithin(body) as {
      error?: { message?: unknown } | string;
      message?: unknown;
    } | null;
    if (typeof parsed?.error === 'string') return parsed.error;
    if (typeof parsed?.error?.message === 'string') return parsed.error.message;
    if (typeof parsed?.message === 'string') return parsed.message;
  } catch {
    // not JSON, or past its bounds: use the text itself
  }
  return body;
}

/**
 * `err` as an ApplicationFailure with `changes`, everything else as it was: its message, type (a
 * plain Error's name), retryability, details, next retry delay, category, cause and stack.
 */
export function remadeFailure(
  err: unknown,
  changes: Pick<
    ApplicationFailureOptions,
    'message' | 'nonRetryable' | 'details' | 'nextRetryDelay'
  >,
): ApplicationFailure {
  const failure = err instanceof ApplicationFailure ? err : undefined;
  const error = err instanceof Error ? err : new Error(String(err));
  const remade = ApplicationFailure.create({
    message: error.message,
    type: (failure ? failure.type : error.name) ?? undefined,
    nonRetryable: failure?.nonRetryable ?? false,
    details: failure?.details ? [...failure.details] : undefined,
    nextRetryDelay: failure?.nextRetryDelay ?? undefined,
    category: failure?.category ?? undefined,
    cause: failure ? failure.cause : (error.cause as Error | undefined),
    ...changes,
  });
  remade.stack = error.stack;
  return remade;
}
