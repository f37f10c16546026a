/**
 * Files that activities produce (docs/workflow-format.md "Providers"): every file a node yields is stored in
 * GridFS under the run's account and handed on as a part with a signed link served by this
 * service (D19), so a provider's temporary URL never reaches a caller. Every one counts against the
 * account's storage quota (store/storage-quota.ts); files of work nobody paid for (an
 * `http_request` answer, a URL input's copy) are refused past it, paid ones are kept (D35: nothing
 * paid is lost; their price bounds them).
 */
import type { Readable } from 'node:stream';
import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from 'mongodb';
import type { Config } from '../config';
import type { Part } from '../domain/parts';
import type { FileLinks } from '../lib/files/links';
import { fallbackName, remoteFileName, withExtension } from '../lib/files/names';
import { partTypeOf } from '../lib/files/sniff';
import {
  guardedGet,
  UrlRefusedError,
  type GuardedResponse,
  type GuardOptions,
} from '../lib/net/ssrf';
import { deadline } from '../lib/net/deadline';
import type { Collections } from '../store/db';
import { runAccountId } from '../store/runs';
import type { StorageQuota } from '../store/storage-quota';
import {
  FileTooLargeError,
  storeBytes,
  storeFile,
  type FileDoc,
  type StoreFileOptions,
} from '../store/files';
import { providerFailure } from './failures';
import { activitySignal, rethrowIfCancelled } from './provider-http';

/** What an activity needs to store files and link to them. */
export interface FileDeps {
  db: Db;
  links: FileLinks;
  collections: Pick<Collections, 'runs'>;
  config: Pick<Config, 'files'>;
  /** D19: what the account's files may still hold (this worker's remembered sums). */
  quota: StorageQuota;
}

/** The account a run's files belong to: passed by the workflow, or (runs started before it was) read from the run record. */
export async function runAccount(
  deps: Pick<FileDeps, 'collections'>,
  req: { runId: string; accountId?: string },
): Promise<string> {
  if (req.accountId) return req.accountId;
  const accountId = await runAccountId(deps.collections, req.runId);
  if (!accountId)
    throw ApplicationFailure.nonRetryable(`run ${req.runId} has no record`, 'InvalidNodeConfig');
  return accountId;
}

/** The part for a stored file: typed by its MIME type unless the node fixes the type (an image generation yields images). */
export async function filePart(
  links: FileLinks,
  doc: FileDoc,
  type = partTypeOf(doc.metadata.mime_type),
): Promise<Part> {
  return {
    type,
    url: await links.url(doc._id),
    name: doc.metadata.name,
    mime_type: doc.metadata.mime_type,
  };
}

/** Storage limits become failures that fail the item (retrying fetches the same too-large file). */
export function storageFailure(err: unknown, what: string): never {
  if (err instanceof FileTooLargeError) {
    throw ApplicationFailure.nonRetryable(
      `${what} is larger than the ${err.limitBytes} byte file limit`,
      'ProviderRejected',
    );
  }
  throw err;
}

/**
 * D19: stores a file of work nobody paid for (an `http_request` answer, a URL input's copy) within
 * the account's storage quota, as an upload is: refused before a byte is read when its declared
 * length passes the file limit or does not fit, else once it grows past the room left; nothing of
 * it is kept then.
 */
export async function storeWithinQuota(
  deps: FileDeps,
  body: Readable,
  declaredBytes: number,
  opts: Omit<StoreFileOptions, 'maxBytes'>,
): Promise<FileDoc> {
  const limit = deps.config.files.maxBytes;
  // A length past the file limit is refused unread (read, it would fail at the limit anyway).
  if (declaredBytes > limit) {
    body.destroy();
    throw new FileTooLargeError(limit);
  }
  const { room, used, quota, fits, release } = await deps.quota.reserve(
    opts.accountId,
    declaredBytes,
  );
  if (!fits) {
    body.destroy(); // unread: the connection must not wait on it
    throw quotaFull(used, quota);
  }
  try {
    const doc = await storeFile(deps.db, body, { ...opts, maxBytes: Math.min(limit, room) });
    deps.quota.changed(opts.accountId, doc.length);
    return doc;
  } catch (err) {
    if (err instanceof FileTooLargeError && room < limit) throw quotaFull(used, quota);
    throw err;
  } finally {
    release();
  }
}

/** The failure type of a file the account's storage quota has no room for. */
export const STORAGE_QUOTA_EXCEEDED = 'StorageQuotaExceeded';

/** Why the account's storage has no room: its files and stored items hold `used` of `quota` bytes. */
export function quotaFullMessage(used: number, quota: number): string {
  return `the account's files and stored items hold ${used} of the ${quota} bytes its storage quota allows: delete files or runs to make room`;
}

/** The account's files hold what they may: the item (a URL input: its run) fails; a re-run of failed items may retry once room is made. */
function quotaFull(used: number, quota: number): ApplicationFailure {
  return ApplicationFailure.nonRetryable(quotaFullMessage(used, quota), STORAGE_QUOTA_EXCEEDED);
}

/** Stores bytes a provider sent inline (`b64_json`, a `data:` URL). */
export async function storeOutputBytes(
  deps: FileDeps,
  bytes: Uint8Array,
  opts: Omit<StoreFileOptions, 'maxBytes' | 'source'>,
): Promise<FileDoc> {
  const doc = await storeBytes(deps.db, bytes, {
    ...opts,
    maxBytes: deps.config.files.maxBytes,
    source: 'output',
  }).catch((err) => storageFailure(err, 'the output'));
  deps.quota.changed(opts.accountId, doc.length);
  return doc;
}

/** A `data:` URL's percent-encoded text; a malformed one (`100%`) fails its item, not the node. */
function percentDecoded(provider: string, text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw ApplicationFailure.nonRetryable(
      `${provider}: an output data: URL is not percent-encoded text`,
      'ProviderRejected',
    );
  }
}

/**
 * Downloads a file a provider made and stores it. The URL comes from the provider's answer, so it
 * is untrusted input: it goes through the SSRF guard with the provider's guard (providerGuard:
 * its configured origin is trusted exactly, any other URL and every redirect hop must be public),
 * and the size and time limits hold. `data:` URLs are decoded in place.
 */
export async function storeProviderFile(
  deps: FileDeps,
  guard: GuardOptions,
  provider: string,
  rawUrl: string,
  opts: { accountId: string; runId: string; stem: string },
): Promise<FileDoc> {
  const base = { accountId: opts.accountId, runId: opts.runId };
  const inline = /^data:[^,]*?(;base64)?,(.*)$/s.exec(rawUrl);
  if (inline) {
    const bytes = inline[1]
      ? Buffer.from(inline[2], 'base64')
      : Buffer.from(percentDecoded(provider, inline[2]), 'utf8');
    return storeOutputBytes(deps, bytes, {
      ...base,
      name: (mime) => fallbackName(opts.stem, mime),
    });
  }
  const limit = deadline(deps.config.files.fetchTimeoutMs, activitySignal()); // the whole download
  let res: GuardedResponse;
  try {
    res = await guardedGet(rawUrl, { ...guard, signal: limit.signal });
  } catch (err) {
    limit.done();
    rethrowIfCancelled();
    if (err instanceof UrlRefusedError)
      throw ApplicationFailure.nonRetryable(
        `${provider}: output URL refused: ${err.message}`,
        'ProviderRejected',
      );
    throw ApplicationFailure.retryable(
      `${provider}: downloading an output failed: ${(err as Error).message}`,
      'ProviderUnavailable',
    );
  }
  try {
    if (res.status < 200 || res.status >= 300) {
      throw providerFailure(
        `${provider} output download`,
        res.status,
        res.body.statusMessage || 'no message',
      );
    }
    const declared = Number(res.headers['content-length'] ?? '0');
    if (declared > deps.config.files.maxBytes)
      storageFailure(new FileTooLargeError(deps.config.files.maxBytes), `${provider}'s output`);
    const named = remoteFileName(new URL(rawUrl), res.headers['content-disposition']);
    const doc = await storeFile(deps.db, res.body, {
      ...base,
      name: (mime) => withExtension(named ?? opts.stem, mime),
      maxBytes: deps.config.files.maxBytes,
      source: 'output',
    });
    deps.quota.changed(opts.accountId, doc.length);
    return doc;
  } catch (err) {
    rethrowIfCancelled();
    if (err instanceof ApplicationFailure) throw err;
    if (err instanceof FileTooLargeError) storageFailure(err, `${provider}'s output`);
    if ((err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError') {
      throw ApplicationFailure.retryable(
        `${provider}: downloading an output timed out`,
        'ProviderUnavailable',
      );
    }
    throw err;
  } finally {
    res.body.destroy(); // an unread rest (an error answer, a file over the limit) must not hold the connection
    limit.done();
  }
}
