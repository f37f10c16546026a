/**
 * One webhook POST through the SSRF guard of lib/net/ssrf.ts (D20): the scheme is checked, the host
 * resolved and every address checked, and the connection made to the checked address. Redirects
 * are never followed: the answer's status, 3xx included, is returned for the caller to judge.
 */
import http from 'node:http';
import https from 'node:https';
import { checkedAddress, checkedUrl, pinnedLookup, type GuardOptions } from '../net/ssrf';

export interface PostOptions extends Pick<GuardOptions, 'allowHttp' | 'allowPrivate' | 'resolve'> {
  headers: Record<string, string>;
  /** Bounds the whole exchange, answer included. */
  timeoutMs: number;
}

/** At most this much of an answer is read (for the log); the rest is dropped. */
const MAX_ANSWER_BYTES = 4096;

/**
 * POSTs `body` as JSON to `raw` and resolves to the answer's status and the start of its body.
 * Throws UrlRefusedError for a refused URL (retrying cannot help) and other errors for network failures.
 */
export async function postWebhook(
  raw: string,
  body: string,
  opts: PostOptions,
): Promise<{ status: number; answer: string }> {
  const url = checkedUrl(raw, opts);
  const pinned = await checkedAddress(url, opts);
  const client = url.protocol === 'https:' ? https : http;
  const signal = AbortSignal.timeout(opts.timeoutMs);
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'wrs-webhooks/1',
        ...opts.headers,
      },
      lookup: pinnedLookup(pinned.address, pinned.family),
      agent: false, // no pooled socket: connect to the address just checked
      signal,
    });
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () =>
        resolve({
          status: res.statusCode ?? 0,
          answer: Buffer.concat(chunks).toString('utf8').slice(0, MAX_ANSWER_BYTES),
        });
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= MAX_ANSWER_BYTES) {
          done(); // the status is what counts: a receiver's endless answer must not hold the attempt
          res.destroy();
        }
      });
      res.once('error', reject);
      res.once('end', done);
    });
    req.end(body);
  });
}
