/** POST /api/v1/responses: start a run, answered with 202 (async) or the run's event stream (`stream: true`). */
import Router from '@koa/router';
import type { AppDeps } from '../app';
import { authenticate } from '../middleware/authenticate';
import { jsonBody } from '../middleware/json-body';
import { parseRequest, StartRequestSchema, type AsyncStartResponse } from '../schemas';
import { startRun } from '../services/start-run';
import { streamNewRun } from '../stream/run-streams';

/** Routes of the responses resource. */
export function responsesRoutes(deps: AppDeps): Router {
  const router = new Router();
  router.post(
    '/api/v1/responses',
    authenticate(deps.collections),
    jsonBody({ limitBytes: deps.config.api.maxJsonBodyBytes, maxDepth: deps.config.api.maxJsonDepth }),
    async (ctx) => {
      const request = parseRequest(StartRequestSchema, ctx.request.body);
      // Everything that can refuse the start happens before the stream opens, so refusals are plain JSON errors.
      const run = await startRun(deps, ctx.state.auth!, request);
      if (request.stream) return streamNewRun(ctx, deps, run);
      ctx.status = 202;
      ctx.body = {
        run_id: run._id,
        status: 'pending',
        published_workflow_id: run.published_workflow_id,
        published_workflow_version_id: run.published_workflow_version_id,
        created_at: run.created_at.toISOString(),
      } satisfies AsyncStartResponse;
    },
  );
  return router;
}
