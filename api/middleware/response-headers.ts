/**
 * Headers every answer carries, set before the routes so a route that means otherwise overrides
 * them: `X-Content-Type-Options: nosniff` everywhere (the playground's `script-src 'self'` trusts
 * this whole origin, so no answer of it may be read as script or a page by sniffing), and
 * `Cache-Control: no-store` on the API's answers, which hold an account's runs, outputs and links:
 * a browser app's calls must leave no copy in the disk cache after its tab is closed.
 */
import type { Middleware } from 'koa';

/** Koa middleware: the headers above, before the rest of the chain runs. */
export function responseHeaders(): Middleware {
  return async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    if (ctx.path.startsWith('/api/')) ctx.set('Cache-Control', 'no-store');
    await next();
  };
}
