/** Liveness and readiness probes (no key needed). */
import Router from '@koa/router';
import type { AppDeps } from '../app';
import { ServiceUnavailableError } from '../errors';

/** /healthz answers while the process runs; /readyz only when MongoDB and Temporal answer. */
export function healthRoutes(deps: AppDeps): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    try {
      await Promise.all([
        deps.db.command({ ping: 1 }),
        deps.gateway.client.connection.withDeadline(Date.now() + 2_000, () =>
          deps.gateway.client.workflowService.getSystemInfo({}),
        ),
      ]);
    } catch {
      throw new ServiceUnavailableError('Not ready: MongoDB or Temporal does not answer.');
    }
    ctx.body = { status: 'ready' };
  });
  return router;
}
