/**
 * The workflows resource: POST /api/v1/workflows (publish a graph, D26, within the account's
 * workflow storage), GET /api/v1/workflows (list them, D30), GET /api/v1/workflows/{workflowId} (a
 * contract, D24) and DELETE /api/v1/workflows/{workflowId} (a workflow and its versions, D26).
 */
import Router from '@koa/router';
import type { Db } from 'mongodb';
import type { Config } from '../../config';
import type { Collections } from '../../store/db';
import type { GuardDeps } from '../deps';
import type { WorkflowCatalog } from '../workflows/workflow-catalog';
import type { StorageQuota } from '../../store/storage-quota';
import { HttpError } from '../errors/http-error';
import { authenticate } from '../middleware/authenticate';
import { rateLimit } from '../middleware/rate-limit';
import { jsonBody } from '../middleware/json-body';
import { publishWorkflow } from '../../store/publish-workflow';
import { workflowContract } from '../workflows/workflow-contract';
import { listWorkflows } from '../workflows/list-workflows';
import { deleteWorkflow } from '../workflows/delete-workflow';
import { PublishQueue } from '../workflows/publish-queue';
import { defaultFileProblems } from '../files/file-inputs';
import {
  ContractQuerySchema,
  ListWorkflowsQuerySchema,
  parseRequest,
} from '../contract/request-schemas';

/** What the workflows routes use: their guards, the store (publish, list), the catalog (contracts) and the quota (D26). */
export type WorkflowsRouteDeps = GuardDeps & {
  collections: Collections;
  db: Db; // the account's files, for the defaults a version names (D19)
  config: Pick<Config, 'api' | 'files'>;
  catalog: WorkflowCatalog;
  workflowQuota: StorageQuota;
};

/** Routes of the workflows resource. */
export function workflowsRoutes(deps: WorkflowsRouteDeps): Router {
  const router = new Router();
  const publishes = new PublishQueue();
  router.post(
    '/api/v1/workflows',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    async (ctx, next) => {
      // A place in the account's queue before the body is read: a refusal reads none of it.
      const release = publishes.admit(ctx.state.auth!.accountId);
      try {
        await next();
      } finally {
        release();
      }
    },
    jsonBody({
      limitBytes: deps.config.api.maxJsonBodyBytes,
      maxDepth: deps.config.api.maxJsonDepth,
    }),
    async (ctx) => {
      const accountId = ctx.state.auth!.accountId;
      ctx.body = await publishes.run(accountId, async () => {
        // The version's bytes are held from the check to the answer, so concurrent publishes in
        // this process cannot pass the quota together.
        let release = () => {};
        try {
          return await publishWorkflow(deps.collections, accountId, ctx.request.body, {
            check: (version) => defaultFileProblems(deps, version, accountId),
            admit: async (bytes) => {
              const reservation = await deps.workflowQuota.reserve(accountId, bytes);
              if (!reservation.fits)
                throw workflowStorageExceeded(bytes, reservation.used, reservation.quota);
              release = reservation.release;
            },
            onDeleted: (workflow) => {
              deps.catalog.deleted(workflow);
              deps.workflowQuota.changed(accountId, -(workflow.stored_bytes ?? 0));
            },
            onPublished: (workflow, version, bytes) => {
              deps.catalog.published(workflow, version);
              deps.workflowQuota.changed(accountId, bytes);
            },
          });
        } finally {
          release();
        }
      });
      ctx.status = 201;
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
  router.delete(
    '/api/v1/workflows/:workflowId',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    async (ctx) => {
      ctx.body = await deleteWorkflow(deps, ctx.state.auth!.accountId, ctx.params.workflowId);
    },
  );
  return router;
}

/** D26: a version that does not fit in what the account's published workflows may hold (413, nothing stored). */
function workflowStorageExceeded(bytes: number, used: number, quota: number): HttpError {
  return new HttpError(
    `The account's published workflow versions hold ${used} of the ${quota} bytes they may: this version (${bytes} bytes) does not fit. Delete workflows you no longer need (DELETE /api/v1/workflows/{workflowId}), or ask your operator for a larger quota.`,
    { code: 'storage_quota_exceeded' },
  );
}
