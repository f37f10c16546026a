/** The HTTP call every provider activity makes: cancellable, bounded, and classified into retryable or not. */
import { Context } from '@temporalio/activity';
import { errorMessage, providerFailure } from './failures';

export type FetchFn = typeof fetch;

/** POSTs JSON to a provider and returns the parsed JSON answer, throwing the right failure for a non-2xx. */
export async function postJson(
  fetchFn: FetchFn,
  provider: string,
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<unknown> {
  return requestJson(fetchFn, provider, url, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** GETs a provider's JSON resource (a prediction's state), failing the same way as postJson. */
export function getJson(
  fetchFn: FetchFn,
  provider: string,
  url: string,
  headers: Record<string, string>,
): Promise<unknown> {
  return requestJson(fetchFn, provider, url, { method: 'GET', headers });
}

async function requestJson(
  fetchFn: FetchFn,
  provider: string,
  url: string,
  init: { method: string; body?: string; headers: Record<string, string> },
): Promise<unknown> {
  let text: string;
  let res: Response;
  try {
    res = await fetchFn(url, {
      method: init.method,
      headers: { accept: 'application/json', ...init.headers },
      body: init.body,
      // Aborted when the activity is cancelled (a run cancel, or the attempt timing out).
      signal: activitySignal(),
    });
    text = await res.text();
  } catch (err) {
    rethrowIfCancelled();
    throw err;
  }
  if (!res.ok) throw providerFailure(provider, res.status, errorMessage(text));
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw providerFailure(provider, 502, 'answer is not JSON');
  }
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
