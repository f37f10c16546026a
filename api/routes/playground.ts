/** GET / (the playground page) and GET /playground/{asset} (its hashed, immutable bundles). */
import Router from '@koa/router';
import type { Context } from 'koa';
import type { Config } from '../../config';
import { NotFoundError } from '../../domain/errors';
import { buildPlayground, loadPlayground, type PlaygroundBundle } from '../../playground/bundle';

/** What the page's routes use: the public base URL (for the CSP) and the prebuilt bundle's folder. */
export interface PlaygroundRouteDeps {
  config: Pick<Config, 'api'>;
}

/**
 * The page's Content-Security-Policy: its own script and style only (nothing inline), API calls
 * to its own origin only (the key never leaves it), and media from signed file links, which
 * are this service's (PUBLIC_BASE_URL's origin when that is set).
 */
export function playgroundCsp(publicBaseUrl?: string): string {
  const files = publicBaseUrl ? ` ${new URL(publicBaseUrl).origin}` : '';
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data: blob:${files}`,
    `media-src 'self' blob:${files}`,
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * Routes of the playground: the page built into the image (PLAYGROUND_BUNDLE_DIR, loaded here, so
 * a missing one stops the API at start), or from source bundled on its first request and kept.
 */
export function playgroundRoutes(deps: PlaygroundRouteDeps): Router {
  const router = new Router();
  const csp = playgroundCsp(deps.config.api.publicBaseUrl);
  const prebuilt = deps.config.api.playgroundBundleDir;
  let building: Promise<PlaygroundBundle> | undefined = prebuilt
    ? Promise.resolve(loadPlayground(prebuilt))
    : undefined;
  const bundle = () => {
    building ??= buildPlayground().catch((err) => {
      building = undefined; // a failed build is retried by the next request, not cached
      throw err;
    });
    return building;
  };
  const secure = (ctx: Context) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
  };

  router.get('/', async (ctx) => {
    const { html, etag } = await bundle();
    secure(ctx);
    ctx.set('Content-Security-Policy', csp);
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Cache-Control', 'no-cache'); // revalidated every time: a new deployment shows at once
    ctx.etag = etag;
    ctx.type = 'text/html; charset=utf-8';
    ctx.status = 200; // Koa's freshness check only looks at 2xx answers
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.body = html;
  });
  router.get('/playground/:asset', async (ctx) => {
    const asset = (await bundle()).assets.get(ctx.params.asset);
    if (!asset)
      throw new NotFoundError(
        'No such playground asset (the page was updated: reload it).',
        'asset_not_found',
      );
    secure(ctx);
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable'); // the name holds the content's hash
    ctx.type = asset.type;
    ctx.body = asset.body;
  });
  return router;
}
