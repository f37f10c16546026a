/**
 * One debug line per request: method, path (never the query string, where a careless client
 * might put a key), status, duration and the caller's `key_` record id. Never headers, so the
 * secret of a key cannot reach a log line (D6).
 */
import type { Middleware } from 'koa';
import type { Logger } from '../logger';

/** Koa middleware logging every request once it has been answered (or its stream opened). */
export function requestLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = Date.now();
    try {
      await next();
    } finally {
      if (logger.isLevelEnabled('debug')) {
        const auth = ctx.state.auth;
        logger.debug(
          {
            method: ctx.method,
            path: ctx.state.logPath ?? ctx.path,
            status: ctx.status,
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
