/** POST /api/v1/workflows: publish a workflow graph (D26). */
import Router from '@koa/router';
import type { AppDeps } from '../app';
import { authenticate } from '../middleware/authenticate';
import { rateLimit } from '../middleware/rate-limit';
import { jsonBody } from '../middleware/json-body';
import { publishWorkflow } from '../services/publish-workflow';

/** Routes of the workflows resource. */
export function workflowsRoutes(deps: AppDeps): Router {
  const router = new Router();
  router.post(
    '/api/v1/workflows',
    authenticate(deps.collections),
    rateLimit(deps, 'requests'),
    jsonBody({ limitBytes: deps.config.api.maxJsonBodyBytes, maxDepth: deps.config.api.maxJsonDepth }),
    async (ctx) => {
      ctx.status = 201;
      ctx.body = await publishWorkflow(deps.collections, ctx.state.auth!.accountId, ctx.request.body);
    },
  );
  return router;
}
