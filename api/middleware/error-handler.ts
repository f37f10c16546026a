/** The outermost handler: every error of every layer becomes the envelope (api/errors/error-answer.ts); no stack trace leaves the server. */
import type { Middleware } from 'koa';
import { NotFoundError } from '../../domain/errors';
import { errorAnswer } from '../errors/error-answer';
import { HttpError } from '../errors/http-error';
import type { Logger } from '../logger';

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
          throw new HttpError(
            `Method ${ctx.method} is not allowed on ${ctx.path}; allowed: ${allow}.`,
            { code: 'method_not_allowed' },
          );
        }
      }
    } catch (err) {
      const answer = errorAnswer(err);
      if (answer.status >= 500) {
        logger.error(
          {
            err,
            request_id: ctx.state.requestId,
            method: ctx.method,
            path: ctx.state.logPath ?? ctx.path,
            account_id: ctx.state.auth?.accountId,
          },
          'request failed',
        );
      }
      ctx.state.errorCode = answer.error.code;
      ctx.status = answer.status;
      for (const [name, value] of Object.entries(answer.headers)) ctx.set(name, value);
      ctx.body = { error: answer.error };
    }
  };
}
