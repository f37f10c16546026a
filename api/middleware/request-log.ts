/**
 * Every answer's `X-Request-Id`, and one debug line per request: its id, method, path (never the query string, where a careless client
 * might put a key), status, an error answer's code, duration and the caller's `key_` record id. Never headers, so the
 * secret of a key cannot reach a log line (D6). A codec-server path (D32) is logged without
 * whatever stands between `/codec/` and its operation, where a token may travel, even when the
 * path is mistyped and no route matches.
 */
import { randomFillSync } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../logger';

const CODEC_OPERATIONS = new Set(['decode', 'encode']);

/** Random bytes for request ids, drawn 256 ids at a time: a draw costs ~2 µs, a slice ~0.1 µs. */
const ID_BYTES = 12;
const idPool = Buffer.alloc(ID_BYTES * 256);
let idTaken = idPool.length;

/** A fresh `req_` id: 96 random bits as hex. */
function requestId(): string {
  if (idTaken === idPool.length) {
    randomFillSync(idPool);
    idTaken = 0;
  }
  const id = idPool.toString('hex', idTaken, idTaken + ID_BYTES);
  idTaken += ID_BYTES;
  return `req_${id}`;
}

/**
 * D32: a codec path as it may be logged: `/codec/decode` or `/codec/encode` when it ends in one,
 * else `/codec/[redacted]`; never a segment that might be the operators' token.
 */
export function codecLogPath(path: string): string {
  const last = path.slice(path.lastIndexOf('/') + 1);
  return `/codec/${CODEC_OPERATIONS.has(last) ? last : '[redacted]'}`;
}

/** Koa middleware logging every request once it has been answered (or its stream opened). */
export function requestLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = Date.now();
    // Every answer names itself, so a caller can quote it and an operator find its log lines.
    ctx.state.requestId = requestId();
    ctx.set('X-Request-Id', ctx.state.requestId);
    // Set before the inner middleware runs, so the error handler's log line uses it too.
    if (ctx.path === '/codec' || ctx.path.startsWith('/codec/'))
      ctx.state.logPath = codecLogPath(ctx.path);
    try {
      await next();
    } finally {
      if (logger.isLevelEnabled('debug')) {
        const auth = ctx.state.auth;
        logger.debug(
          {
            request_id: ctx.state.requestId,
            method: ctx.method,
            path: ctx.state.logPath ?? ctx.path,
            status: ctx.status,
            code: ctx.state.errorCode, // an error answer's: `request_interrupted` is a client gone
            ms: Date.now() - started,
            key_id: auth?.keyId,
            account_id: auth?.accountId,
            run_id: (ctx as { params?: Record<string, string> }).params?.runId,
          },
          'request',
        );
      }
    }
  };
}
