/**
 * An answer sent before its request's body was read (a 401 to an upload, a 429, a 404, any
 * refusal before the body reader) closes the connection. Kept alive, Node would go on reading
 * and discarding the rest of the body to reach the next request, so a client trickling bytes
 * would hold the socket long after its answer (docs/api.md "Connections").
 */
import type { Middleware } from 'koa';

/** Koa middleware: `Connection: close` on any answer whose request body has not fully arrived. */
export function closeUnreadBodies(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      // ctx.respond === false: a stream answered already (its request was read before it opened).
      if (ctx.respond !== false && !ctx.req.complete && !ctx.res.headersSent)
        ctx.set('Connection', 'close');
    }
  };
}
