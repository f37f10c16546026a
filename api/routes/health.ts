/** Liveness and readiness probes (no key needed). */
import Router from '@koa/router';
import type { AppDeps } from '../deps';
import { ServiceUnavailableError } from '../../domain/errors';

/** /healthz answers while the process runs; /readyz only when MongoDB and Temporal answer. */
export function healthRoutes(deps: AppDeps): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    // Both are asked at once and both answers awaited, so the message names each one that is down
    // (issue 8). Each is bounded: MongoDB by the driver's server selection (MONGODB_SERVER_SELECTION_TIMEOUT_MS),
    // Temporal by this deadline (a refused connection fails in ~1 s, api/temporal/run-gateway.ts).
    const [mongo, temporal] = await Promise.allSettled([
      deps.db.command({ ping: 1 }),
      deps.gateway.ping(2_000),
    ]);
    const down = [
      mongo.status === 'rejected' ? 'MongoDB' : '',
      temporal.status === 'rejected' ? 'Temporal' : '',
    ].filter(Boolean);
    if (down.length > 0)
      throw new ServiceUnavailableError(
        `Not ready: ${down.join(' and ')} ${down.length > 1 ? 'do' : 'does'} not answer.`,
      );
    ctx.body = { status: 'ready' };
  });
  return router;
}
