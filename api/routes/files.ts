/**
 * Files (D19): POST /api/v1/files uploads, GET /api/v1/files lists the caller's uploads,
 * GET /api/v1/files/{fileId} re-issues a link, DELETE
 * /api/v1/files/{fileId} removes an upload (its room in the quota with it), and
 * GET /files/{fileId}/content serves the bytes to whoever holds a signed link, without an
 * Authorization header (so `<img src>` and `<video src>` work in a browser).
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { isId } from '../../domain/ids';
import { defaultBaseUrl, FileLinks } from '../../lib/files/links';
import { contentDisposition, servedName } from '../../lib/files/names';
import { parseRange } from '../../lib/files/range';
import { deleteFile, findFile, openFileContent, uploadPage, type FileDoc } from '../../store/files';
import type { Db } from 'mongodb';
import type { Config } from '../../config';
import type { GuardDeps } from '../deps';
import type { KeyCap } from '../limits/key-cap';
import type { KeyCache } from '../auth/key-cache';
import { InvalidRequestError, NotFoundError } from '../../domain/errors';
import { HttpError } from '../errors/http-error';
import { authenticate } from '../middleware/authenticate';
import { rateLimit } from '../middleware/rate-limit';
import type { DeletedFile, FileList, FileView } from '../contract/response-schemas';
import { ListFilesQuerySchema, parseRequest } from '../contract/request-schemas';
import { UploadQuerySchema } from '../contract/http-schemas';
import { uploadFile, type UploadDeps } from '../files/upload-file';
import { assertIdentityEncoding } from '../middleware/identity-encoding';
import { LinkRefusedError } from './link-refused';

/** The file object of the API, with a fresh signed link for the caller's key (D6: it dies with the key). */
async function fileView(
  links: FileLinks,
  doc: FileDoc,
  baseUrl: string,
  keyId: string,
): Promise<FileView> {
  return {
    id: doc._id,
    name: doc.metadata.name,
    mime_type: doc.metadata.mime_type,
    size: doc.length,
    created_at: doc.metadata.created_at.toISOString(),
    url: await links.url(doc._id, baseUrl, keyId),
  };
}

/**
 * Where links in answers point: PUBLIC_BASE_URL, else the address this connection reached the
 * API on (the listening socket's, never the `Host` header: a caller must not be able to make our
 * links point at a host of theirs). Behind a proxy, set PUBLIC_BASE_URL (docs/deploy.md).
 */
export function requestBaseUrl(ctx: Context, config: Pick<Config, 'api' | 'files'>): string {
  if (config.api.publicBaseUrl) return config.api.publicBaseUrl;
  const { localAddress, localPort } = ctx.req.socket;
  if (!localAddress || !localPort) return defaultBaseUrl(config);
  const host = localAddress.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, ''); // IPv4-mapped IPv6
  const scheme = config.api.tls ? 'https' : 'http';
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${localPort}`;
}

/** What the files routes use: their guards, the upload, GridFS (db) and the key check of links (D6). */
export type FilesRouteDeps = GuardDeps &
  UploadDeps & { db: Db; config: Config; keys: Pick<KeyCache, 'isLive'>; downloads: KeyCap };

/**
 * A file this large read through a link takes one of its key's download slots (D40, as a results
 * file does): 16 links held on a 64 MiB upload at once stalled the store for every account. Smaller
 * ones (a run's images, shown many at once by a page) are served without one.
 */
export const LARGE_FILE_BYTES = 8 * 1024 * 1024;

/** Routes of the files resource. */
export function filesRoutes(deps: FilesRouteDeps): Router {
  const router = new Router();
  const links = new FileLinks(deps.config, deps.db);
  const baseUrl = (ctx: Context) => requestBaseUrl(ctx, deps.config);

  router.post('/api/v1/files', authenticate(deps), rateLimit(deps, 'requests'), async (ctx) => {
    assertIdentityEncoding(ctx.req.headers); // stored as sent, a compressed body would stay compressed
    const { name } = parseRequest(UploadQuerySchema, ctx.query, 'query');
    const doc = await uploadFile(deps, ctx.req, {
      accountId: ctx.state.auth!.accountId,
      queryName: name,
      contentType: ctx.get('content-type'),
    });
    ctx.status = 201;
    ctx.body = await fileView(links, doc, baseUrl(ctx), ctx.state.auth!.keyId);
  });

  router.get('/api/v1/files', authenticate(deps), rateLimit(deps, 'requests'), async (ctx) => {
    const { limit, starting_after } = parseRequest(ListFilesQuerySchema, ctx.query, 'query');
    const { accountId, keyId } = ctx.state.auth!;
    const docs = await uploadPage(deps.db, accountId, { limit, startingAfter: starting_after });
    const page = docs.slice(0, limit);
    ctx.body = {
      object: 'list',
      data: await Promise.all(page.map((doc) => fileView(links, doc, baseUrl(ctx), keyId))),
      first_id: page[0]?._id ?? null,
      last_id: page.at(-1)?._id ?? null,
      has_more: docs.length > limit,
    } satisfies FileList;
  });

  const fileNotFound = (fileId: string) => new NotFoundError(`No file \`${fileId.slice(0, 64)}\`.`);

  /** The caller's file named by the path; 404 for any other (D6). */
  const ownFile = async (ctx: Context): Promise<FileDoc> => {
    const { fileId } = ctx.params;
    const doc = isId('file', fileId)
      ? await findFile(deps.db, fileId, ctx.state.auth!.accountId)
      : null;
    if (!doc) throw fileNotFound(fileId);
    return doc;
  };

  router.get(
    '/api/v1/files/:fileId',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    async (ctx) => {
      ctx.body = await fileView(links, await ownFile(ctx), baseUrl(ctx), ctx.state.auth!.keyId);
    },
  );

  router.delete(
    '/api/v1/files/:fileId',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    async (ctx) => {
      const doc = await ownFile(ctx);
      const { source, run_id: runId } = doc.metadata;
      // A run's file (a node's output, a URL input it copied) is part of its record: it goes with the run (D39).
      if (source !== 'upload')
        throw new InvalidRequestError(
          `File \`${doc._id}\` belongs to run \`${runId}\` (${source === 'output' ? 'an output of one of its nodes' : 'a URL input it copied'}) and goes with it: delete the run (DELETE /api/v1/runs/${runId}).`,
          { code: 'file_of_run' },
        );
      // Deletes at once: one removes the file and frees its room; the others find it gone (404),
      // or the room would be freed once for each of them.
      if (!(await deleteFile(deps.db, doc._id))) throw fileNotFound(doc._id);
      deps.fileQuota.changed(doc.metadata.account_id, -doc.length);
      ctx.body = { id: doc._id, object: 'file', deleted: true } satisfies DeletedFile;
    },
  );

  router.get('/files/:fileId/content', async (ctx) => {
    const { fileId } = ctx.params;
    const { expires, sig, kid } = ctx.query;
    const check = await links.check(fileId, expires, sig, kid);
    if (check !== 'ok') throw new LinkRefusedError('file', check);
    // A link made for a key (an upload's answer, GET /api/v1/files/{id}) dies with it, within
    // KEY_CACHE_MS; links in run outputs are the run's, made by the worker, and name no key.
    if (typeof kid === 'string' && !(await deps.keys.isLive(kid)))
      throw new LinkRefusedError('file', 'key_revoked');
    const doc = await findFile(deps.db, fileId);
    if (!doc) throw new NotFoundError('This file no longer exists.'); // D29: removed after the retention period
    // Counted against the key that made the link, or (a run output's, made by the worker) the account.
    if (doc.length > LARGE_FILE_BYTES)
      ctx.res.once(
        'close',
        deps.downloads.take(typeof kid === 'string' ? kid : doc.metadata.account_id),
      );
    serveContent(ctx, deps, doc, Number(ctx.query.expires));
  });
  return router;
}

/** Answers with the file's bytes (or the requested range), streamed from GridFS. */
function serveContent(ctx: Context, deps: { db: Db }, doc: FileDoc, expires: number): void {
  const size = doc.length;
  const etag = `"${doc._id}"`; // a file's bytes never change
  const lastModified = doc.metadata.created_at.toUTCString();
  // If-Range names the copy the client holds, by ETag or by date: another copy gets the whole file.
  const ifRange = ctx.get('if-range');
  const range = parseRange(
    ifRange && ifRange !== etag && ifRange !== lastModified
      ? undefined
      : ctx.get('range') || undefined,
    size,
  );
  ctx.set('Accept-Ranges', 'bytes');
  ctx.set('ETag', etag);
  ctx.set('Last-Modified', lastModified);
  // Cacheable until the link expires (at most a day): the content behind a file id is immutable.
  const maxAge = Math.max(0, Math.min(86_400, expires - Math.floor(Date.now() / 1000)));
  ctx.set('Cache-Control', `private, max-age=${maxAge}`);
  // Uploaded bytes are served from the API's origin: never let a browser run them as a page
  // (the sniffer never yields HTML or SVG; the sandbox is the second line, on every type).
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
  ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
  // A browser or client that holds the bytes already (If-None-Match, If-Modified-Since) gets
  // 304 and no body; it is decided before the range, as HTTP orders the preconditions.
  ctx.status = 200;
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  if (range.kind === 'unsatisfiable') {
    ctx.remove('Cache-Control'); // a refusal is no copy of the file to keep
    throw new HttpError(`The requested range is outside the file (${size} bytes).`, {
      code: 'range_not_satisfiable',
      headers: { 'Content-Range': `bytes */${size}`, 'Accept-Ranges': 'bytes' },
    });
  }
  const mime = doc.metadata.mime_type;
  if (range.kind === 'partial') {
    ctx.status = 206;
    ctx.body = openFileContent(deps.db, doc._id, {
      start: range.start,
      endExclusive: range.end + 1,
    });
    ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
    ctx.length = range.end - range.start + 1;
  } else {
    ctx.status = 200;
    // An empty file: GridFS has no chunk to stream.
    ctx.body = size === 0 ? Buffer.alloc(0) : openFileContent(deps.db, doc._id);
    ctx.length = size;
  }
  ctx.type = mime === 'text/plain' ? 'text/plain; charset=utf-8' : mime;
  // A browser's PDF viewer is a script that will not run sandboxed: PDFs are downloads, not pages.
  ctx.set(
    'Content-Disposition',
    contentDisposition(
      servedName(doc.metadata.name, mime),
      mime === 'application/pdf' ? 'attachment' : 'inline',
    ),
  );
}
