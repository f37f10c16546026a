/**
 * The HTTP calls every provider activity makes: cancellable, bounded, classified into retryable
 * or not, and made through the SSRF guard (lib/net/ssrf.ts) like every outbound request of the
 * worker. A provider's base URL comes from configuration, so its origin is trusted exactly
 * (scheme, host, port); the URLs inside its answers (output files, redirects) are untrusted
 * input and are checked like a caller's (docs/workflow-format.md "Providers"). An answer is read
 * into memory only up to MAX_ANSWER_BYTES (lib/net/read-limited.ts): a provider cannot exhaust the
 * worker's memory with an endless body.
 */
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Provider } from '../config';
import { JsonOutOfBounds, parseJsonWithin } from '../domain/json-depth';
import {
  guardedFetch,
  UrlRefusedError,
  type GuardedResponse,
  type GuardOptions,
} from '../lib/net/ssrf';
import {
  AnswerTooLargeError,
  DEFAULT_MAX_ANSWER_BYTES,
  readLimited,
} from '../lib/net/read-limited';
import type { ReadBudget } from '../lib/net/read-budget';
import { errorMessage, providerFailure } from './failures';
import { requestSent } from './heartbeat';
import { observeProviderCall, providerOutcome } from '../lib/metrics';

/**
 * Where the worker may send requests for URLs nobody configured, and how much of an answer it
 * reads into memory (MAX_ANSWER_BYTES; default DEFAULT_MAX_ANSWER_BYTES), set once from
 * configuration (activities/index.ts).
 */
export type OutboundGuard = Pick<GuardOptions, 'allowPrivate' | 'allowedHosts' | 'resolve'> & {
  maxAnswerBytes?: number;
  /** What all the answers the worker reads at once may hold (WORKER_ANSWER_BUFFER_BYTES, lib/net/read-budget.ts). */
  readBudget?: ReadBudget;
};

/** The guard of one provider's calls (providerGuard), with the answer cap they read under. */
export type ProviderGuard = GuardOptions & { maxAnswerBytes?: number; readBudget?: ReadBudget };

/**
 * The guard of one provider's calls and of the URLs in its answers: the configured origin is
 * trusted exactly; any other URL must resolve to public addresses only (unless `guard` allows
 * more). `http://` is accepted: the guard is about where a request goes, not how.
 */
export function providerGuard(
  guard: OutboundGuard,
  provider: Pick<Provider, 'base_url'>,
): ProviderGuard {
  return { ...guard, allowHttp: true, trustedOrigins: [new URL(provider.base_url).origin] };
}

/** POSTs JSON to a provider and returns the parsed JSON answer, throwing the right failure for a non-2xx. */
export async function postJson(
  guard: ProviderGuard,
  provider: string,
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<unknown> {
  return requestJson(guard, provider, url, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** GETs a provider's JSON resource (a prediction's state), failing the same way as postJson. */
export function getJson(
  guard: ProviderGuard,
  provider: string,
  url: string,
  headers: Record<string, string>,
): Promise<unknown> {
  return requestJson(guard, provider, url, { method: 'GET', headers });
}

/**
 * One request to a provider through the guard; the answer's body is read whole, up to the guard's
 * maxAnswerBytes. A URL the guard refuses (a redirect of the provider's to a private address), or
 * an answer over the cap (cut off while reading), fails the item for good.
 */
export async function providerRequest(
  guard: ProviderGuard,
  provider: string,
  url: string,
  init: { method: string; body?: string; headers: Record<string, string>; signal?: AbortSignal },
): Promise<ProviderAnswer> {
  const signal = init.signal ?? activitySignal() ?? new AbortController().signal;
  return tracedProviderCall(provider, init.method, url, () =>
    observeProviderCall(
      provider,
      () => guardedProviderRequest(guard, provider, url, init, signal),
      (answer) => providerOutcome(answer.status),
      () => (signal.aborted ? 'cancelled' : 'network_error'),
    ),
  );
}

/**
 * A client span around one provider request, child of the activity's (no-op while tracing is
 * off): the configured provider's name, the method and the URL's origin only (a path may name a
 * prediction), never the body or headers.
 */
async function tracedProviderCall<T extends { status: number }>(
  provider: string,
  method: string,
  url: string,
  call: () => Promise<T>,
): Promise<T> {
  return trace.getTracer('wrs-worker').startActiveSpan(
    `provider ${method}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'wrs.provider': provider,
        'http.request.method': method,
        'server.address': URL.canParse(url) ? new URL(url).origin : 'invalid',
      },
    },
    async (span) => {
      try {
        const answer = await call();
        span.setAttribute('http.response.status_code', answer.status);
        if (answer.status >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
        return answer;
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/** A provider's answer, read whole: its status, its body and its `Retry-After` header, if any. */
export interface ProviderAnswer {
  status: number;
  text: string;
  retryAfter?: string | string[];
}

async function guardedProviderRequest(
  guard: ProviderGuard,
  provider: string,
  url: string,
  init: { method: string; body?: string; headers: Record<string, string> },
  signal: AbortSignal,
): Promise<ProviderAnswer> {
  let res: GuardedResponse | undefined;
  try {
    requestSent(); // D36: a call made, whatever comes of it
    res = await guardedFetch(url, {
      ...guard,
      method: init.method,
      headers: init.headers,
      body: init.body,
      // Aborted when the activity is cancelled (a run cancel, or the attempt timing out).
      signal,
    });
    const bytes = await readLimited(
      res.body,
      guard.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES,
      res.headers['content-length'],
      guard.readBudget && { budget: guard.readBudget, signal },
    );
    return {
      status: res.status,
      text: bytes.toString('utf8'),
      retryAfter: res.headers['retry-after'],
    };
  } catch (err) {
    rethrowIfCancelled();
    if (err instanceof UrlRefusedError || err instanceof AnswerTooLargeError)
      throw ApplicationFailure.nonRetryable(`${provider}: ${err.message}`, 'ProviderRejected');
    throw err;
  } finally {
    res?.body.destroy();
  }
}

async function requestJson(
  guard: ProviderGuard,
  provider: string,
  url: string,
  init: { method: string; body?: string; headers: Record<string, string> },
): Promise<unknown> {
  const { status, text, retryAfter } = await providerRequest(guard, provider, url, {
    ...init,
    headers: { accept: 'application/json', ...init.headers },
  });
  if (status < 200 || status >= 300)
    throw providerFailure(provider, status, errorMessage(text), retryAfter);
  let answer: unknown;
  try {
    answer = parseJsonWithin(text);
  } catch (err) {
    if (err instanceof JsonOutOfBounds)
      throw ApplicationFailure.nonRetryable(
        `${provider}: answer ${err.message}`,
        'ProviderRejected',
      );
    throw providerFailure(provider, 502, 'answer is not JSON');
  }
  // Every API spoken here answers an object; `null`, a number or a list fails the item, not the
  // run (read as an object it was a TypeError, retried and then the run's end).
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer))
    throw ApplicationFailure.nonRetryable(
      `${provider}: the answer is not a JSON object`,
      'ProviderRejected',
    );
  return answer;
}

/** After an aborted call: if the activity was cancelled, report the cancellation rather than a network error. */
export function rethrowIfCancelled(): void {
  const signal = activitySignal();
  if (signal?.aborted) throw signal.reason;
}

/** The current activity's cancellation signal, if running inside one. */
export function activitySignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}
