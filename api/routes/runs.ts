/** GET /api/v1/runs/{runId}: the run record, safe to poll. */
import Router from '@koa/router';
import type { AppDeps } from '../app';
import { authenticate } from '../middleware/authenticate';
import { readRun } from '../services/read-run';

/** Routes of the runs resource. */
export function runsRoutes(deps: AppDeps): Router {
  const router = new Router();
  router.get('/api/v1/runs/:runId', authenticate(deps.collections), async (ctx) => {
    ctx.body = await readRun(deps, ctx.state.auth!.accountId, ctx.params.runId);
  });
  return router;
}
