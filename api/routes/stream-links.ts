/**
 * D34 stream links: POST /api/v1/runs/{runId}/stream-link (with the key) mints a signed URL to
 * that run's stream, and GET /streams/{runId}?expires=&sig= serves it to whoever holds the URL,
 * without an Authorization header: a backend starts a run and its browser front end follows it
 * with a native EventSource, which cannot send headers but does resend `Last-Event-ID`.
 * Signed like file links (D19), with the same secret; valid for at most an hour.
 */
import Router from '@koa/router';
import { FileLinks } from '../../lib/files/links';
import { findRunWithoutLog } from '../../store/runs';
import type { Db } from 'mongodb';
import type { Config } from '../../config';
import type { Collections } from '../../store/db';
import type { GuardDeps } from '../deps';
import { NotFoundError } from '../../domain/errors';
import { authenticate } from '../middleware/authenticate';
import { jsonBody } from '../middleware/json-body';
import { countRequest, limitFor, rateLimit } from '../middleware/rate-limit';
import {
  parseRequest,
  StreamLinkRequestSchema,
  StreamQuerySchema,
} from '../contract/request-schemas';
import type { StreamLink } from '../contract/response-schemas';
import { loadRunHead } from '../runs/read-run';
import { streamExistingRun, type RunStreamDeps } from '../stream/run-streams';
import { requestBaseUrl } from './files';
import { LinkRefusedError } from './link-refused';

/** What the stream-link routes use: their guards, the links' signing (D34), the run's record and its stream. */
export type StreamLinkRouteDeps = GuardDeps &
  RunStreamDeps & {
    db: Db;
    config: Pick<Config, 'api' | 'files'>;
    collections: Pick<Collections, 'runs' | 'runChunks' | 'itemBlocks'>;
  };

/** Routes minting and serving stream links. */
export function streamLinkRoutes(deps: StreamLinkRouteDeps): Router {
  const router = new Router();
  const links = new FileLinks(deps.config, deps.db);
  const body = jsonBody({
    limitBytes: deps.config.api.maxJsonBodyBytes,
    maxDepth: deps.config.api.maxJsonDepth,
  });

  router.post(
    '/api/v1/runs/:runId/stream-link',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    // The body is optional: a POST without one gets the longest link, whatever its Content-Type
    // says (empty, `Content-Length: 0`, or neither a length nor `Transfer-Encoding`, which in
    // HTTP/1.1 is no body: curl's bare `-X POST -H 'Content-Type: application/json'`).
    (ctx, next) =>
      ctx.request.length === 0 ||
      (ctx.request.length === undefined && !ctx.get('transfer-encoding'))
        ? next()
        : body(ctx, next),
    async (ctx) => {
      // No body at all is `{}`; a body of JSON `null` (or any other non-object) is refused like any wrong type.
      const { ttl_seconds } = parseRequest(
        StreamLinkRequestSchema,
        ctx.request.body === undefined ? {} : ctx.request.body,
      );
      const run = await loadRunHead(deps.collections, ctx.state.auth!.accountId, ctx.params.runId);
      const { url, expires } = await links.streamUrl(
        run._id,
        requestBaseUrl(ctx, deps.config),
        ttl_seconds,
        ctx.state.auth!.keyId, // D6: the link, and a stream it opened, end with this key
      );
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { url, expires_at: new Date(expires * 1000).toISOString() } satisfies StreamLink;
    },
  );

  router.get('/streams/:runId', async (ctx) => {
    const { runId } = ctx.params;
    const { expires, sig, kid } = ctx.query;
    const check = await links.checkStream(runId, expires, sig, kid);
    if (check !== 'ok') throw new LinkRefusedError('stream', check);
    // A link names the key that made it; one made before links did is bound to the run's key.
    const keyId = typeof kid === 'string' ? kid : undefined;
    // The link's own parameters are checked above; the rest is a stream's query, strict as on streamRun.
    const { expires: _e, sig: _s, kid: _k, ...streamQuery } = ctx.query;
    parseRequest(StreamQuerySchema, streamQuery, 'query');
    const run = await findRunWithoutLog(deps.collections, runId, { inputs: false });
    if (!run) throw new NotFoundError('This run no longer exists.'); // D29: removed after the retention period
    if (!(await deps.keys.isLive(keyId ?? run.key_id)))
      throw new LinkRefusedError('stream', 'key_revoked');
    // D16: a key's links share a request allowance of their own (the service default), so a
    // link's holders neither go unlimited nor spend the key's.
    await countRequest(ctx, deps, {
      counter: `link:${keyId ?? run.key_id}`,
      bucket: 'requests',
      limit: limitFor('requests', null, deps.config.api.rateLimits),
      whose: "this API key's stream links",
    });
    await streamExistingRun(ctx, deps, run, keyId);
  });
  return router;
}
