/**
 * File, image and video inputs of a run (D19), resolved by the worker before the graph runs: a
 * `file_...` id (its owner was checked by the API at start) becomes a part with a signed link;
 * an https URL is fetched through the SSRF guard (lib/net/ssrf.ts), within the size and time
 * limits, stored under the run's account and linked the same way. A URL the guard refuses, or
 * that answers 4xx, fails the run before any node runs (docs/api.md "Files").
 */
import { ApplicationFailure } from '@temporalio/activity';
import { isId } from '../domain/ids';
import type { Part } from '../domain/parts';
import { remoteFileName, withExtension } from '../lib/files/names';
import { guardedGet, UrlRefusedError } from '../lib/net/ssrf';
import { deadline } from '../lib/net/deadline';
import { findFile, FileTooLargeError } from '../store/files';
import { isTransientStatus } from './failures';
import { runAccount, STORAGE_QUOTA_EXCEEDED, storeWithinQuota, type FileDeps } from './files';
import { heartbeating } from './heartbeat';
import { activitySignal, rethrowIfCancelled } from './provider-http';

export interface FileInputRequest {
  runId: string;
  accountId?: string;
  /** The input's normalized label, for messages. */
  key: string;
  inputType: 'image' | 'video' | 'file';
  /** A `file_...` id or an http(s) URL (already checked by D4 validation). */
  value: string;
}

const refused = (message: string) => ApplicationFailure.nonRetryable(message, 'InvalidInput');

/** Builds the activity that turns one file-typed input value into the part the run works with. */
export function createFileInputActivity(deps: { files: () => FileDeps }) {
  const resolve = async (req: FileInputRequest): Promise<Part> => {
    const { db, links, config, collections } = deps.files();
    if (isId('file', req.value)) {
      const doc = await findFile(db, req.value);
      if (!doc) throw refused(`input '${req.key}': file ${req.value} no longer exists`);
      return {
        type: req.inputType,
        url: await links.url(doc._id),
        name: doc.metadata.name,
        mime_type: doc.metadata.mime_type,
      };
    }
    const accountId = await runAccount({ collections }, req);
    const { files } = config;
    const limit = deadline(files.fetchTimeoutMs, activitySignal()); // the whole download
    try {
      const res = await guardedGet(req.value, {
        allowHttp: files.allowHttpUrls,
        allowPrivate: files.allowPrivateNetwork,
        allowedHosts: files.allowPrivateHosts,
        signal: limit.signal,
      });
      if (res.status < 200 || res.status >= 300) {
        res.body.destroy(); // not drained: an endless body would keep its connection open
        const message = `input '${req.key}': ${res.url.origin} answered ${res.status}`;
        throw isTransientStatus(res.status)
          ? ApplicationFailure.retryable(message, 'InputUnavailable')
          : refused(message);
      }
      if (Number(res.headers['content-length'] ?? '0') > files.maxBytes) {
        res.body.destroy();
        throw new FileTooLargeError(files.maxBytes);
      }
      const name = remoteFileName(res.url, res.headers['content-disposition']);
      // A URL input's copy is the caller's data, as an upload is: within the account's quota.
      const doc = await storeWithinQuota(
        deps.files(),
        res.body,
        Number(res.headers['content-length'] ?? '0'),
        {
          accountId,
          runId: req.runId,
          name: (mime) => withExtension(name ?? req.key, mime),
          source: 'input',
        },
      );
      return {
        type: req.inputType,
        url: await links.url(doc._id),
        name: doc.metadata.name,
        mime_type: doc.metadata.mime_type,
      };
    } catch (err) {
      rethrowIfCancelled();
      if (err instanceof ApplicationFailure && err.type === STORAGE_QUOTA_EXCEEDED)
        throw refused(`input '${req.key}': ${err.message}`);
      if (err instanceof ApplicationFailure) throw err;
      if (err instanceof UrlRefusedError) throw refused(`input '${req.key}': ${err.message}`);
      if (err instanceof FileTooLargeError)
        throw refused(
          `input '${req.key}': the file is larger than the ${err.limitBytes} byte limit`,
        );
      const e = err as Error;
      const why =
        e.name === 'TimeoutError' || e.name === 'AbortError'
          ? `no complete answer within ${files.fetchTimeoutMs} ms`
          : e.message;
      throw ApplicationFailure.retryable(
        `input '${req.key}': fetching ${safeOrigin(req.value)} failed: ${why}`,
        'InputUnavailable',
      );
    } finally {
      limit.done();
    }
  };
  return function resolveFileInput(req: FileInputRequest): Promise<Part> {
    return heartbeating(() => resolve(req));
  };
}

function safeOrigin(raw: string): string {
  try {
    return new URL(raw).origin;
  } catch {
    return 'the URL';
  }
}
