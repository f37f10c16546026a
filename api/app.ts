/** The Koa application: CORS and the error envelope wrap every route (D22 and the status table). */
import './koa-state';
import Router from '@koa/router';
import Koa from 'koa';
import cors from '@koa/cors';
import { only, routeDeps, type AppDeps, type RouteDeps } from './deps';
import { closeUnreadBodies } from './middleware/close-unread';
import { errorHandler } from './middleware/error-handler';
import { httpMetrics } from './middleware/http-metrics';
import { requestLog } from './middleware/request-log';
import { responseHeaders } from './middleware/response-headers';
import { tracing } from './middleware/tracing';
import { accountRoutes } from './routes/account';
import { filesRoutes } from './routes/files';
import { healthRoutes } from './routes/health';
import { openapiRoutes } from './routes/openapi';
import { playgroundRoutes } from './routes/playground';
import { metricsRoutes } from './routes/metrics';
import { responsesRoutes } from './routes/responses';
import { runsRoutes } from './routes/runs';
import { rerunRoutes } from './routes/rerun';
import { streamLinkRoutes } from './routes/stream-links';
import { workflowsRoutes } from './routes/workflows';
import { codecCorsOrigin, codecRoutes } from './routes/codec';

/** Builds the application from its dependencies (tests construct their own). */
export function createApp(appDeps: AppDeps): Koa {
  const deps = routeDeps(appDeps);
  const app = new Koa({ proxy: false });
  app.silent = true; // the error middleware logs what matters; Koa's own stderr dump would leak stacks
  app.use(
    cors({
      // The codec server (D32) answers only the configured Temporal UI origins, with credentials; the API everyone.
      origin: (ctx) =>
        isCodecPath(ctx.path)
          ? codecCorsOrigin(deps.config.codec.corsOrigins, ctx.get('origin'))
          : '*',
      credentials: (ctx) => isCodecPath(ctx.path),
      allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'], // DELETE: a browser app deletes a run (D39)
      // `Range` and the Content-* answers: browsers seek in and name files served by signed links (D19).
      allowHeaders: [
        'Authorization',
        'Content-Type',
        'Idempotency-Key',
        'Last-Event-ID',
        'Prefer',
        'Range',
        'X-Namespace',
      ],
      exposeHeaders: [
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-RateLimit-Reset',
        'Retry-After',
        'X-Request-Id',
        'Content-Range',
        'Accept-Ranges',
        'Content-Disposition',
      ],
      maxAge: 600,
    }),
  );
  app.use(responseHeaders()); // nosniff everywhere, no-store on the API's answers (routes may override)
  app.use(closeUnreadBodies()); // an answer before the body arrived closes the connection
  // A server span per request, parent of the workflow start's: mounted only while tracing is on.
  if (deps.config.tracing.otlpEndpoint) app.use(tracing());
  app.use(requestLog(deps.logger)); // outside the error handler, so it logs the status actually sent
  app.use(httpMetrics()); // likewise: counts the status actually sent, by route template
  app.use(errorHandler(deps.logger));
  // One router holding every route (the resources' routers are copied into it): a request is
  // matched once, where a router each was ten matches and twenty middleware layers a request.
  const api = new Router();
  for (const router of routers(deps)) api.use(router.routes());
  app.use(api.routes());
  // Not thrown: the router then sets `Allow` (RFC 9110 requires it on a 405), and the error
  // middleware turns the bare 405/501 into the envelope.
  app.use(api.allowedMethods());
  return app;
}

// The fields every authenticated route's guards use (authenticate, then rateLimit).
const GUARDS = ['collections', 'keys', 'rateCounter', 'config'] as const;
// A start and what answers it: the credit gate, the catalog, the record's group commit, the
// stream of a new run or the wait for its end (D28).
const STARTS = [
  ...GUARDS,
  'db',
  'gateway',
  'credits',
  'catalog',
  'knownRuns',
  'runWrites',
  'finishedRuns',
  'drain',
  'pollers',
  'streams',
  'downloads',
] as const;

/** Every route, each given only the dependencies it uses (its own *RouteDeps type). */
function routers(deps: RouteDeps) {
  return [
    healthRoutes(only(deps, 'drain', 'db', 'gateway')),
    metricsRoutes(only(deps, 'db', 'gateway', 'config')),
    openapiRoutes(only(deps, 'config')),
    workflowsRoutes(only(deps, ...GUARDS, 'db', 'catalog', 'workflowQuota')),
    responsesRoutes(only(deps, ...STARTS)),
    runsRoutes(
      only(
        deps,
        ...GUARDS,
        'db',
        'gateway',
        'finishedRuns',
        'knownRuns',
        'pollers',
        'streams',
        'downloads',
        'fileQuota',
      ),
    ),
    rerunRoutes(only(deps, ...STARTS)),
    filesRoutes(only(deps, ...GUARDS, 'db', 'fileQuota', 'downloads')),
    accountRoutes(only(deps, ...GUARDS, 'credits', 'fileQuota', 'workflowQuota')),
    streamLinkRoutes(only(deps, ...GUARDS, 'db', 'pollers', 'streams')),
    playgroundRoutes(only(deps, 'config')),
    codecRoutes({ config: deps.config, codec: deps.gateway.codec }),
  ];
}

const isCodecPath = (path: string) => path.startsWith('/codec/');
