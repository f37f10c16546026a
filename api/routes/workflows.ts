/** POST /api/v1/workflows (publish a graph, D26), GET /api/v1/workflows (list them, D30) and GET /api/v1/workflows/{workflowId} (a contract, D24). */
import Router from '@koa/router';
import type { RouteDeps } from '../deps';
import { authenticate } from '../middleware/authenticate';
import { rateLimit } from '../middleware/rate-limit';
import { jsonBody } from '../middleware/json-body';
import { publishWorkflow } from '../../store/publish-workflow';
import { workflowContract } from '../workflows/workflow-contract';
import { listWorkflows } from '../workflows/list-workflows';
import {
  ContractQuerySchema,
  ListWorkflowsQuerySchema,
  parseRequest,
} from '../contract/request-schemas';

/** Routes of the workflows resource. */
export function workflowsRoutes(deps: RouteDeps): Router {
  const router = new Router();
  router.post(
    '/api/v1/workflows',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    jsonBody({
      limitBytes: deps.config.api.maxJsonBodyBytes,
      maxDepth: deps.config.api.maxJsonDepth,
    }),
    async (ctx) => {
      ctx.status = 201;
      ctx.body = await publishWorkflow(
        deps.collections,
        ctx.state.auth!.accountId,
        ctx.request.body,
        (workflow, version) => deps.catalog.published(workflow, version),
      );
    },
  );
  router.get('/api/v1/workflows', authenticate(deps), rateLimit(deps, 'requests'), async (ctx) => {
    ctx.body = await listWorkflows(
      deps.collections,
      ctx.state.auth!.accountId,
      parseRequest(ListWorkflowsQuerySchema, ctx.query, 'query'),
    );
  });
  router.get(
    '/api/v1/workflows/:workflowId',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    async (ctx) => {
      const { version } = parseRequest(ContractQuerySchema, ctx.query, 'query');
      ctx.body = await workflowContract(
        deps.catalog,
        ctx.state.auth!.accountId,
        ctx.params.workflowId,
        version,
      );
    },
  );
  return router;
}
