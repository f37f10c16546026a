/** POST /api/v1/responses: start a run (async here; the stream mode hands over to the stream module). */
import Router from '@koa/router';
import type { AppDeps } from '../app';
import { authenticate } from '../middleware/authenticate';
import { jsonBody } from '../middleware/json-body';
import { parseRequest, StartRequestSchema, type AsyncStartResponse } from '../schemas';
import { startRun } from '../services/start-run';
import { InvalidRequestError } from '../errors';

/** Routes of the responses resource. */
export function responsesRoutes(deps: AppDeps): Router {
  const router = new Router();
  router.post(
    '/api/v1/responses',
    authenticate(deps.collections),
    jsonBody({ limitBytes: deps.config.api.maxJsonBodyBytes, maxDepth: deps.config.api.maxJsonDepth }),
    async (ctx) => {
      const request = parseRequest(StartRequestSchema, ctx.request.body);
      if (request.stream) throw new InvalidRequestError('Streaming starts are not available yet.', { param: 'stream' });
      const run = await startRun(deps, ctx.state.auth!, request);
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
