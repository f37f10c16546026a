/** GET /api/v1/runs/{runId} (the run record, safe to poll) and GET /api/v1/runs/{runId}/stream (reattach). */
import Router from '@koa/router';
import type { AppDeps } from '../app';
import { authenticate } from '../middleware/authenticate';
import { loadRun, readRun } from '../services/read-run';
import { streamExistingRun } from '../stream/run-streams';

/** Routes of the runs resource. */
export function runsRoutes(deps: AppDeps): Router {
  const router = new Router();
  router.get('/api/v1/runs/:runId', authenticate(deps.collections), async (ctx) => {
    ctx.body = await readRun(deps, ctx.state.auth!.accountId, ctx.params.runId);
  });
  router.get('/api/v1/runs/:runId/stream', authenticate(deps.collections), async (ctx) => {
    // Ownership is checked before any byte of the stream: another account's run is a JSON 404.
    const run = await loadRun(deps.collections, ctx.state.auth!.accountId, ctx.params.runId);
    streamExistingRun(ctx, deps, run);
  });
  return router;
}
