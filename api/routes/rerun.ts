/** POST /api/v1/runs/{runId}/rerun (D38): a new run of the same version and inputs, answered exactly like a start. */
import Router from '@koa/router';
import type { GuardDeps } from '../deps';
import { authenticate } from '../middleware/authenticate';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import { parseRequest, RerunRequestSchema } from '../contract/request-schemas';
import { parseIdempotencyKey, type IdempotentStartDeps } from '../runs/idempotent-start';
import { rerunRun } from '../runs/rerun-run';
import { answerStart, type AnswerStartDeps } from './answer-start';

/** What the re-run route uses: its guards, a start (idempotent or not), and the answer's stream or wait. */
export type RerunRouteDeps = GuardDeps & IdempotentStartDeps & AnswerStartDeps;

/** Routes of the re-run action. */
export function rerunRoutes(deps: RerunRouteDeps): Router {
  const router = new Router();
  router.post(
    '/api/v1/runs/:runId/rerun',
    authenticate(deps),
    rateLimit(deps, 'starts'), // a re-run is a start (D16)
    jsonBody({
      limitBytes: deps.config.api.maxJsonBodyBytes,
      maxDepth: deps.config.api.maxJsonDepth,
    }),
    async (ctx) => {
      const idempotencyKey = parseIdempotencyKey(ctx.req.headers['idempotency-key']);
      const request = parseRequest(RerunRequestSchema, ctx.request.body); // `null` is no object: 400
      await answerStart(ctx, deps, {
        stream: request.stream,
        start: (wait) =>
          rerunRun(deps, ctx.state.auth!, ctx.params.runId, request, idempotencyKey, wait),
      });
    },
  );
  return router;
}
