/** POST /api/v1/workflows (publish a graph, D26), GET /api/v1/workflows (list them, D30) and GET /api/v1/workflows/{workflowId} (a contract, D24). */
import Router from '@koa/router';
import type { Collections } from '../../store/db';
import type { GuardDeps } from '../deps';
import type { WorkflowCatalog } from '../workflows/workflow-catalog';
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

/** What the workflows routes use: their guards, the store (publish, list) and the catalog (contracts). */
export type WorkflowsRouteDeps = GuardDeps & { collections: Collections; catalog: WorkflowCatalog };

/** Routes of the workflows resource. */
export function workflowsRoutes(deps: WorkflowsRouteDeps): Router {
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
