/**
 * The `http_request` node: one HTTP call per iteration; JSON answers become json parts, text
 * answers text parts, anything else a stored file (D19). The URL is rendered from the published
 * workflow and its inputs, so it is caller-controlled: every call goes through the SSRF guard
 * (lib/net/ssrf.ts), like URL inputs and webhooks. A refused URL fails the item for good.
 */
import type { Readable } from 'node:stream';
import { pipeline, Transform } from 'node:stream';
import zlib from 'node:zlib';
import { ApplicationFailure } from '@temporalio/activity';
import { rowTooLargeMessage } from '../domain/item-blocks';
import { completed } from '../domain/items';
import { JsonOutOfBounds, parseJsonWithin } from '../domain/json-depth';
import { providerFailure, providerWords } from './failures';
import { filePart, runAccount, storageFailure, storeWithinQuota, type FileDeps } from './files';
import { heartbeating, requestSent } from './heartbeat';
import { remoteFileName, withExtension } from '../lib/files/names';
import type { ReadBudget } from '../lib/net/read-budget';
import { guardedFetch, UrlRefusedError, type GuardedResponse } from '../lib/net/ssrf';
import { deadline } from '../lib/net/deadline';
import {
  AnswerTooLargeError,
  DEFAULT_MAX_ANSWER_BYTES,
  readLimited,
} from '../lib/net/read-limited';
import { activitySignal, rethrowIfCancelled, type OutboundGuard } from './provider-http';
import type { NodeRequest, NodeResult } from './types';
import { rowTemplates } from './node-inputs';

export interface HttpRequestDeps {
  files: () => FileDeps;
  /** The SSRF guard's settings (the worker's outbound guard); absent: private addresses are refused. */
  guard?: OutboundGuard;
}

/** Builds the activity that runs one iteration of an http_request node. */
export function createHttpRequestActivity(deps: HttpRequestDeps) {
  const guard = (): OutboundGuard => deps.guard ?? { allowPrivate: false };
  const maxAnswerBytes = () => deps.guard?.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  const call = async (req: NodeRequest<'http_request'>): Promise<NodeResult> => {
    const request = renderRequest(req);
    // `timeout_ms` bounds the whole exchange, the answer's body included.
    const limit = deadline(request.timeoutMs, activitySignal());
    try {
      const res = await send(request, guard(), limit.signal);
      try {
        return await answer(req, res);
      } catch (err) {
        rethrowIfCancelled();
        if (err instanceof ApplicationFailure) throw err;
        if (err instanceof DecodedTooLargeError)
          throw ApplicationFailure.nonRetryable(
            `the answer of ${res.url.host} is refused: ${err.message}`,
            'ProviderRejected',
          );
        // Bytes that do not decode as their content coding says decode no better when sent again.
        if (isZlibError(err))
          throw ApplicationFailure.nonRetryable(
            `the answer of ${res.url.host} does not decode as its content-encoding '${res.headers['content-encoding']}' says: ${(err as Error).message}`,
            'ProviderRejected',
          );
        throw ApplicationFailure.retryable(
          `reading the answer of ${res.url.host} failed: ${(err as Error).message}`,
          'ProviderUnavailable',
        );
      } finally {
        res.body.destroy(); // an unread rest (an error body over the limit) must not hold the connection
      }
    } finally {
      limit.done();
    }
  };

  const answer = async (
    req: NodeRequest<'http_request'>,
    res: GuardedResponse,
  ): Promise<NodeResult> => {
    const ok = res.status >= 200 && res.status < 300;
    const type = String(res.headers['content-type'] ?? '').toLowerCase();
    const body = decoded(res);
    if (
      ok &&
      !(type === '' || type.includes('json') || type.startsWith('text/') || type.includes('xml'))
    )
      return binaryAnswer(deps.files(), req, res, body);
    return heldAnswer(res, body, ok, type, {
      maxAnswerBytes: maxAnswerBytes(),
      rowMaxBytes: req.rowMaxBytes,
      budget: deps.guard?.readBudget,
    });
  };

  return function httpRequest(req: NodeRequest<'http_request'>): Promise<NodeResult> {
    return heartbeating(() => call(req));
  };
}

/** The request a node's templates render to for one iteration's inputs. */
interface RenderedRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
  timeoutMs: number;
}

/** Renders the node's URL, headers and body from the iteration's inputs; a non-http(s) URL fails for good. */
function renderRequest(req: NodeRequest<'http_request'>): RenderedRequest {
  const { node } = req;
  const fill = rowTemplates(req);
  const url = fill(node.url);
  if (!/^https?:\/\//i.test(url)) {
    throw ApplicationFailure.nonRetryable(
      `url '${url.slice(0, 200)}' is not an http(s) URL`,
      'ProviderRejected',
    );
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(node.headers ?? {}))
    headers[name.toLowerCase()] = fill(value);
  const method = node.method ?? 'GET';
  const body = node.body !== undefined && method !== 'GET' ? fill(node.body) : undefined;
  // What fetch sent for a string body, which this node used before the guard: keep receivers' parsing unchanged.
  if (body !== undefined && headers['content-type'] === undefined)
    headers['content-type'] = 'text/plain;charset=UTF-8';
  return { url, method, headers, body, timeoutMs: node.timeout_ms ?? 30_000 };
}

/** Sends the request through the SSRF guard; a refused URL or unsendable header fails for good, a network error is retried. */
async function send(
  request: RenderedRequest,
  guard: OutboundGuard,
  signal: AbortSignal,
): Promise<GuardedResponse> {
  const { url, method, headers, body } = request;
  try {
    requestSent(); // D36: a call made, whatever comes of it
    // http:// stays allowed: a plain-http public API is the workflow author's choice; the guard is about where, not how.
    return await guardedFetch(url, {
      ...guard,
      allowHttp: true,
      method,
      headers,
      body,
      signal,
    });
  } catch (err) {
    rethrowIfCancelled();
    if (err instanceof UrlRefusedError)
      throw ApplicationFailure.nonRetryable(err.message, 'ProviderRejected');
    const code = (err as { code?: string }).code;
    if (code === 'ERR_INVALID_CHAR' || code === 'ERR_INVALID_HTTP_TOKEN') {
      // A header the workflow rendered cannot be sent at all: retrying renders the same one.
      throw ApplicationFailure.nonRetryable(
        `the request cannot be sent: ${(err as Error).message}`,
        'ProviderRejected',
      );
    }
    throw ApplicationFailure.retryable(
      `request to ${hostOf(url)} failed: ${(err as Error).message}`,
      'ProviderUnavailable',
    );
  }
}

/** A binary answer: streamed into GridFS (never whole in memory) and typed by its bytes, not by the header. */
async function binaryAnswer(
  files: FileDeps,
  req: NodeRequest<'http_request'>,
  res: GuardedResponse,
  body: Readable,
): Promise<NodeResult> {
  const accountId = await runAccount(files, req);
  const name = remoteFileName(res.url, res.headers['content-disposition']);
  const declared = Number(res.headers['content-length'] ?? '0');
  // Nobody pays for an http_request (costUsd 0): what it stores is bounded by the account's quota.
  const doc = await storeWithinQuota(files, body, declared, {
    accountId,
    runId: req.runId,
    name: (mime) => withExtension(name ?? 'response', mime),
    source: 'output',
  }).catch((err) => {
    rethrowIfCancelled();
    return storageFailure(err, 'the answer');
  });
  return { items: [completed(await filePart(files.links, doc))], costUsd: 0 };
}

/** JSON and text (and error answers) are held whole: read up to the cap, cut off past it. */
async function heldAnswer(
  res: GuardedResponse,
  body: Readable,
  ok: boolean,
  type: string,
  limits: { maxAnswerBytes: number; rowMaxBytes?: number; budget?: ReadBudget },
): Promise<NodeResult> {
  // A row of a list holds less than one answer may (domain/item-blocks.ts): no more is read.
  const { maxAnswerBytes, rowMaxBytes = Infinity, budget } = limits;
  const byRow = rowMaxBytes < maxAnswerBytes;
  const cap = byRow ? rowMaxBytes : maxAnswerBytes;
  const share = budget && { budget, signal: activitySignal() };
  const bytes = await readLimited(body, cap, res.headers['content-length'], share).catch(
    (err: unknown) => {
      if (err instanceof AnswerTooLargeError) {
        const why = byRow ? rowTooLargeMessage(cap) : err.message;
        throw ApplicationFailure.nonRetryable(`http ${res.url.host}: ${why}`, 'ProviderRejected');
      }
      throw err;
    },
  );
  const text = new TextDecoder().decode(bytes);
  if (!ok)
    throw providerFailure(
      `http ${res.url.host}`,
      res.status,
      providerWords(text) || res.body.statusMessage || 'no message',
      res.headers['retry-after'],
    );
  // An answer without a body (a 204, an empty 200) is an empty text, whatever type it names.
  if (type.includes('json') && bytes.length > 0) {
    try {
      return {
        items: [completed({ type: 'json', data: parseJsonWithin(text) })],
        costUsd: 0,
      };
    } catch (err) {
      if (err instanceof JsonOutOfBounds)
        throw ApplicationFailure.nonRetryable(
          `the answer's JSON ${err.message}`,
          'ProviderRejected',
        );
      throw ApplicationFailure.nonRetryable(
        'the answer says JSON but does not parse',
        'ProviderRejected',
      );
    }
  }
  return { items: [completed({ type: 'text', text })], costUsd: 0 };
}

/** An error of zlib's decoders (a corrupt or cut gzip, deflate or brotli stream): Z_* codes, ERR__ERROR_* for brotli. */
function isZlibError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('Z_') || code.startsWith('ERR__ERROR_'));
}

/** The host a URL names, for messages; never its path or query. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the url';
  }
}

/**
 * A coded answer decodes to at most MAX_DECODED_RATIO times the bytes sent, past the first
 * DECODED_FLOOR_BYTES. Nobody pays for an `http_request`, and a binary answer is stored up to the
 * file limit: 108 bytes of brotli from a tenant's server made 128 MiB of writes to the shared store
 * (×1.2 million). Text compresses 5–20 times, rarely past 100; a decompression bomb, thousands.
 */
export const MAX_DECODED_RATIO = 100;
export const DECODED_FLOOR_BYTES = 1024 * 1024;

class DecodedTooLargeError extends Error {}

/** The answer's bytes as sent before any content coding (fetch decoded them, and workflows may ask for gzip). */
function decoded(res: GuardedResponse): Readable {
  const coding = String(res.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  const decoder =
    coding === 'gzip' || coding === 'x-gzip'
      ? zlib.createGunzip()
      : coding === 'deflate'
        ? zlib.createInflate()
        : coding === 'br'
          ? zlib.createBrotliDecompress()
          : undefined;
  if (!decoder) return res.body;
  let sent = 0;
  let made = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      sent += chunk.length;
      done(null, chunk);
    },
  });
  const bounded = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      made += chunk.length;
      if (made <= DECODED_FLOOR_BYTES || made <= MAX_DECODED_RATIO * sent) done(null, chunk);
      else
        done(
          new DecodedTooLargeError(
            `its ${sent} bytes of '${coding}' decoded past ${made} bytes, more than ${MAX_DECODED_RATIO} times as many`,
          ),
        );
    },
  });
  // pipeline destroys every stream on an error, which the reader of the last then sees.
  return pipeline(res.body, counted, decoder, bounded, () => undefined);
}
