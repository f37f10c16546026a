/** The outermost handler: every error of every layer becomes the envelope; no stack trace leaves the server. */
import type { Middleware } from 'koa';
import { MongoNetworkError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import {
  ApiError,
  InvalidRequestError,
  NotFoundError,
  ServiceUnavailableError,
} from '../../domain/errors';
import type { Logger } from '../logger';
import { isTemporalUnavailable } from '../temporal/grpc-errors';

/** Maps any thrown value to an ApiError. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNetworkError ||
    isDatabaseBusy(err) ||
    isTemporalUnavailable(err)
  ) {
    return new ServiceUnavailableError();
  }
  const status = (err as { status?: unknown })?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // koa / @koa/router HttpErrors (405 from allowedMethods, 501, 415 ...)
    if (status === 404) return new NotFoundError('Not found.');
    if (status === 405)
      return new InvalidRequestError('Method not allowed on this route.', {
        status: 405,
        code: 'method_not_allowed',
      });
    return new InvalidRequestError((err as Error).message || 'Bad request.', { status });
  }
  return new ApiError(
    500,
    'server_error',
    'The server had an error while processing your request.',
  );
}

/**
 * A write the database refused for now, with nothing written: MongoDB's transient lock and
 * conflict errors, and FerretDB's SQLite writer lock held past its busy timeout (issue 8: 17 of
 * 1,000 starts under load answered 500 with it). The caller may retry: 503 with Retry-After.
 */
export function isDatabaseBusy(err: unknown): boolean {
  if (!(err instanceof MongoServerError)) return false;
  const TRANSIENT_CODES = [
    24 /* LockTimeout */, 50 /* MaxTimeMSExpired */, 112 /* WriteConflict */,
  ];
  return (
    err.hasErrorLabel('TransientTransactionError') ||
    TRANSIENT_CODES.includes(Number(err.code)) ||
    /SQLITE_BUSY|database is locked/.test(err.message)
  );
}

/** Koa middleware that renders the error envelope and logs server faults. */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      // ctx.respond === false: a stream owns the socket and has answered already.
      if (ctx.respond !== false && ctx.body === undefined) {
        if (ctx.status === 404) throw new NotFoundError(`No route for ${ctx.method} ${ctx.path}.`);
        // @koa/router answers a method that no router implements (PROPFIND ...) with 501 even on an
        // unknown path; its `Allow` list tells a known route (405) from an unknown one (404).
        if (ctx.status === 405 || ctx.status === 501) {
          const allow = ctx.response.get('Allow');
          if (!allow) {
            ctx.remove('Allow');
            throw new NotFoundError(`No route for ${ctx.method} ${ctx.path}.`);
          }
          throw new InvalidRequestError(
            `Method ${ctx.method} is not allowed on ${ctx.path}; allowed: ${allow}.`,
            {
              status: 405,
              code: 'method_not_allowed',
            },
          );
        }
      }
    } catch (err) {
      const apiError = toApiError(err);
      if (!apiError.expose || apiError.status >= 500) {
        logger.error(
          {
            err,
            method: ctx.method,
            path: ctx.state.logPath ?? ctx.path,
            account_id: ctx.state.auth?.accountId,
          },
          'request failed',
        );
      }
      ctx.status = apiError.status;
      for (const [name, value] of Object.entries(apiError.headers ?? {})) ctx.set(name, value);
      ctx.body = {
        error: {
          message: apiError.expose
            ? apiError.message
            : 'The server had an error while processing your request.',
          type: apiError.type,
          ...(apiError.code ? { code: apiError.code } : {}),
          ...(apiError.param ? { param: apiError.param } : {}),
          ...(apiError.details ? { details: apiError.details } : {}),
        },
      };
    }
  };
}
