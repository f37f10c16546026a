/**
 * One webhook POST through the SSRF guard of lib/net/ssrf.ts (D20), the one place outbound
 * requests are made: the scheme is checked, the host resolved and every address checked, and the
 * connection made to the checked address. Redirects are never followed: the answer's status, 3xx
 * included, is returned for the caller to judge.
 */
import { deadline } from '../net/deadline';
import { guardedFetch, type GuardOptions, type StreamedBody } from '../net/ssrf';

export interface PostOptions extends Pick<GuardOptions, 'allowHttp' | 'allowPrivate' | 'resolve'> {
  headers: Record<string, string>;
  /** Bounds the whole exchange, answer included. */
  timeoutMs: number;
}

/** At most this much of an answer is read (for the log); the rest is dropped. */
const MAX_ANSWER_BYTES = 4096;

/**
 * POSTs `body` as JSON (a big run's streamed) to `raw` and resolves to the answer's status and the start of its body.
 * Throws UrlRefusedError for a refused URL (retrying cannot help) and other errors for network failures.
 */
export async function postWebhook(
  raw: string,
  body: string | StreamedBody,
  opts: PostOptions,
): Promise<{ status: number; answer: string }> {
  const limit = deadline(opts.timeoutMs);
  try {
    return await exchange(raw, body, opts, limit.signal);
  } catch (err) {
    // The abort's own words ("aborted") would tell the account nothing of why.
    if (limit.signal.aborted)
      throw new Error(`no answer within ${opts.timeoutMs} ms (WEBHOOK_TIMEOUT_MS)`, { cause: err });
    throw err;
  } finally {
    limit.done();
  }
}

async function exchange(
  raw: string,
  body: string | StreamedBody,
  opts: PostOptions,
  signal: AbortSignal,
): Promise<{ status: number; answer: string }> {
  const res = await guardedFetch(raw, {
    allowHttp: opts.allowHttp,
    allowPrivate: opts.allowPrivate,
    resolve: opts.resolve,
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'wrs-webhooks/1',
      ...opts.headers,
    },
    body,
    signal,
    maxRedirects: 0,
  });
  // The status is what counts: a 2xx is a delivery whatever its body does next (one that trickled
  // on past the deadline turned a delivery into a failed attempt, sent again for 24 h).
  if (res.status >= 200 && res.status < 300) {
    res.body.destroy();
    return { status: res.status, answer: '' };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      // A receiver's endless answer must not hold the attempt.
      if (size >= MAX_ANSWER_BYTES) break;
    }
  } catch (err) {
    if (!signal.aborted) throw err; // the deadline passed while the answer trickled: its status stands
  } finally {
    res.body.destroy();
  }
  return {
    status: res.status,
    answer: Buffer.concat(chunks).toString('utf8').slice(0, MAX_ANSWER_BYTES),
  };
}
