/** The `http_request` node: one HTTP call per iteration; JSON answers become json parts, text answers text parts, anything else a stored file (D19). */
import { ApplicationFailure } from '@temporalio/activity';
import { renderTemplate } from '../domain/templates';
import { completed, itemText } from '../workflows/values';
import { providerFailure } from './failures';
import { filePart, runAccount, storageFailure, type FileDeps } from './files';
import { heartbeating } from './heartbeat';
import { remoteFileName, withExtension } from '../files/names';
import { storeFile } from '../store/files';
import { activitySignal, rethrowIfCancelled, type FetchFn } from './provider-http';
import type { NodeRequest, NodeResult } from './types';

const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** Builds the activity that runs one iteration of an http_request node. */
export function createHttpRequestActivity(deps: { files: () => FileDeps; fetch: FetchFn }) {
  const call = async (req: NodeRequest<'http_request'>): Promise<NodeResult> => {
    const { node } = req;
    const values: Record<string, string> = {};
    for (const [port, item] of Object.entries(req.ports)) values[port] = itemText(item);
    const url = renderTemplate(node.url, values);
    if (!/^https?:\/\//i.test(url)) {
      throw ApplicationFailure.nonRetryable(`url '${url.slice(0, 200)}' is not an http(s) URL`, 'ProviderRejected');
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(node.headers ?? {})) headers[name] = renderTemplate(value, values);
    const method = node.method ?? 'GET';
    const signals = [AbortSignal.timeout(node.timeout_ms ?? 30_000), activitySignal()].filter((s): s is AbortSignal => !!s);
    let res: Response;
    try {
      res = await deps.fetch(url, {
        method,
        headers,
        body: node.body !== undefined && method !== 'GET' ? renderTemplate(node.body, values) : undefined,
        signal: AbortSignal.any(signals),
      });
    } catch (err) {
      rethrowIfCancelled();
      throw ApplicationFailure.retryable(`request to ${new URL(url).host} failed: ${(err as Error).message}`, 'ProviderUnavailable');
    }
    const type = (res.headers.get('content-type') ?? '').toLowerCase();
    if (res.ok && !(type === '' || type.includes('json') || type.startsWith('text/') || type.includes('xml'))) {
      // Binary: streamed into GridFS (never whole in memory) and typed by its bytes, not by the header.
      const files = deps.files();
      const accountId = await runAccount(files, req);
      const name = remoteFileName(new URL(url), res.headers.get('content-disposition'));
      const doc = await storeFile(files.db, (res.body ?? []) as AsyncIterable<Uint8Array>, {
        accountId,
        runId: req.runId,
        name: (mime) => withExtension(name ?? 'response', mime),
        maxBytes: files.config.files.maxBytes,
        source: 'output',
      }).catch((err) => {
        rethrowIfCancelled();
        return storageFailure(err, 'the answer');
      });
      return { items: [completed(await filePart(files.links, doc))], costUsd: 0 };
    }
    const body = await readLimited(res);
    const text = new TextDecoder().decode(body);
    if (!res.ok) throw providerFailure(`http ${new URL(url).host}`, res.status, text.slice(0, 500) || res.statusText);
    if (type.includes('json')) {
      try {
        return { items: [completed({ type: 'json', data: JSON.parse(text) as unknown })], costUsd: 0 };
      } catch {
        throw ApplicationFailure.nonRetryable('the answer says JSON but does not parse', 'ProviderRejected');
      }
    }
    return { items: [completed({ type: 'text', text })], costUsd: 0 };
  };
  return function httpRequest(req: NodeRequest<'http_request'>): Promise<NodeResult> {
    return heartbeating(() => call(req));
  };
}

async function readLimited(res: Response): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > MAX_BODY_BYTES) throw ApplicationFailure.nonRetryable(`answer of ${declared} bytes is over the ${MAX_BODY_BYTES} byte limit`, 'ProviderRejected');
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (!res.body) return new Uint8Array();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) throw ApplicationFailure.nonRetryable(`answer is over the ${MAX_BODY_BYTES} byte limit`, 'ProviderRejected');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
