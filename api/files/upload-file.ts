/**
 * POST /api/v1/files (D19): the body streams into GridFS as it arrives, so an upload of any
 * size holds at most a chunk in memory (D10: MAX_UPLOAD_BYTES, 256 MiB by default), within what
 * the account's uploads may still hold (store/storage-quota.ts). Two shapes:
 *   - raw: the body is the file; `?name=` names it (the Content-Type header is not trusted: the
 *     type is sniffed from the bytes);
 *   - multipart/form-data: the first file part is the file (parsed by busboy as it streams);
 *     `?name=` or else the part's filename names it.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import busboy from 'busboy';
import type { Db } from 'mongodb';
import type { Config } from '../../config';
import { cleanFileName, fallbackName } from '../../lib/files/names';
import {
  deleteFile,
  FileTooLargeError,
  storeFile,
  type FileDoc,
  type StoreFileOptions,
} from '../../store/files';
import { InvalidRequestError } from '../../domain/errors';
import { clientWentAway } from '../errors/client-gone';
import { HttpError } from '../errors/http-error';
import type { StorageQuota } from '../../store/storage-quota';

export interface UploadDeps {
  db: Db;
  config: Pick<Config, 'files'>;
  fileQuota: StorageQuota;
}

/** 413 `request_too_large`; `Connection: close` because the rest of the body is never read. */
export function uploadTooLarge(limit: number): InvalidRequestError {
  return new HttpError(`The file is larger than the ${limit} byte upload limit.`, {
    code: 'request_too_large',
    headers: { Connection: 'close' },
  });
}

/** 413 `storage_quota_exceeded`: the account's files and stored items hold (nearly) all they may (D19). */
export function storageQuotaExceeded(used: number, quota: number): InvalidRequestError {
  return new HttpError(
    `The account's files (its uploads and the files its runs made) and the items its big runs store hold ${used} of the ${quota} bytes they may: this file does not fit. Delete uploads (DELETE /api/v1/files/{fileId}) or runs (DELETE /api/v1/runs/{runId}) you no longer need; files also go after the retention period.`,
    { code: 'storage_quota_exceeded', headers: { Connection: 'close' } },
  );
}

/** Stores the upload of one request for `accountId` and returns the file document. */
export async function uploadFile(
  deps: UploadDeps,
  req: IncomingMessage,
  opts: { accountId: string; queryName: unknown; contentType: string },
): Promise<FileDoc> {
  const limit = deps.config.files.maxBytes;
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > limit) throw uploadTooLarge(limit); // refused before a byte is read
  const queryName = cleanFileName(typeof opts.queryName === 'string' ? opts.queryName : undefined);
  const { room, used, quota, fits, release } = await deps.fileQuota.reserve(
    opts.accountId,
    declared,
  );
  if (!fits) throw storageQuotaExceeded(used, quota);
  const store = (source: AsyncIterable<Uint8Array>, partName?: string) =>
    storeFile(deps.db, source, {
      accountId: opts.accountId,
      name:
        queryName ?? cleanFileName(partName) ?? ((mime: string) => fallbackName('upload', mime)),
      maxBytes: Math.min(limit, room),
      source: 'upload',
    } satisfies StoreFileOptions);
  let doc: FileDoc;
  try {
    doc = /^multipart\/form-data\b/i.test(opts.contentType)
      ? await storeMultipart(
          req,
          req.headers,
          store,
          async (d) => void (await deleteFile(deps.db, d._id)),
        )
      : await store(req);
  } catch (err) {
    if (err instanceof FileTooLargeError)
      throw room < limit ? storageQuotaExceeded(used, quota) : uploadTooLarge(limit);
    // A client that went away mid-upload: nothing was stored, and nobody reads this answer.
    if (clientWentAway(req, err))
      throw new InvalidRequestError('The upload was interrupted.', { code: 'upload_interrupted' });
    throw err;
  } finally {
    release();
  }
  if (doc.length === 0) {
    await deleteFile(deps.db, doc._id);
    throw new InvalidRequestError(
      'The upload is empty: send the file as the body, or as a multipart file part.',
      { code: 'empty_file' },
    );
  }
  deps.fileQuota.changed(opts.accountId, doc.length);
  return doc;
}

/** A form's parts and text fields at most (busboy's limits): a form is one file and a few fields. */
const PARTS = 40;
const FIELDS = 20;

/**
 * Streams the first file part of a multipart body into `store`; other parts are skipped.
 * busboy is a streaming parser: it hands the part over as a stream while the body still arrives.
 *
 * Every stream here has its error listener before it is handed on (the request before it is
 * piped, the parser before it is written to, each part before it is stored or skipped): a
 * truncated body makes busboy fail the parser *and* the part, and an 'error' event nobody
 * listens for is thrown out of the event loop and ends the process. The promise settles only
 * after the store has settled too, so when the error answer goes out no partial file is left.
 */
function storeMultipart(
  req: IncomingMessage,
  headers: IncomingHttpHeaders,
  store: (source: AsyncIterable<Uint8Array>, partName?: string) => Promise<FileDoc>,
  remove: (doc: FileDoc) => Promise<void>,
): Promise<FileDoc> {
  return new Promise((resolve, reject) => {
    const malformed = (err: Error) =>
      new InvalidRequestError(`Malformed multipart request: ${err.message}.`, {
        code: 'invalid_multipart',
      });
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers,
        // Browsers send a part's filename as raw UTF-8 (busboy would read it as Latin-1).
        defParamCharset: 'utf8',
        limits: { files: 1, fields: FIELDS, fieldSize: 64 * 1024, parts: PARTS },
      });
    } catch (err) {
      reject(malformed(err as Error));
      return;
    }
    let stored: Promise<FileDoc> | undefined;
    let part: NodeJS.ReadableStream | undefined;
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      req.unpipe(parser); // stop reading: the answer (an error) goes out with `Connection: close`
      // The part ends with the error too, so the store stops and removes what it wrote; a part the
      // store had already finished is removed here. Then the answer.
      (part as { destroy?: (e: Error) => void } | undefined)?.destroy?.(err as Error);
      if (!stored) return reject(err);
      stored
        .then(remove, () => undefined)
        .then(
          () => reject(err),
          () => reject(err),
        );
    };
    req.on('error', fail);
    parser.on('error', (err: Error) => fail(malformed(err)));
    // Past PARTS busboy reads no more parts: a file after them would be reported missing. (Fields
    // past FIELDS are only left unread: the file after them still counts.)
    parser.on('partsLimit', () => {
      if (!stored)
        fail(
          new InvalidRequestError(
            `The multipart request has more than ${PARTS} parts before its file part: send the file first, or fewer fields.`,
            { code: 'invalid_multipart' },
          ),
        );
    });
    parser.on('file', (_field, stream, info) => {
      // busboy ends a part cut off by the body's end with an error ("Unexpected end of file").
      stream.on('error', (err: Error) => fail(clientWentAway(req, err) ? err : malformed(err)));
      if (stored || failed) {
        stream.resume(); // only the first file counts
        return;
      }
      part = stream;
      stored = store(stream, info.filename);
      stored.catch(fail);
    });
    parser.on('close', () => {
      if (failed) return;
      if (!stored)
        reject(
          new InvalidRequestError('The multipart request has no file part.', {
            code: 'invalid_multipart',
          }),
        );
      else stored.then(resolve, fail);
    });
    req.pipe(parser);
  });
}
