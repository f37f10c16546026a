/** POST /api/v1/runs/{runId}/rerun (D38): a new run of the same version and inputs, answered exactly like a start. */
import Router from '@koa/router';
import type { RouteDeps } from '../deps';
import { authenticate } from '../middleware/authenticate';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import {
  parseRequest,
  RerunRequestSchema,
  type AsyncStartResponse,
} from '../contract/request-schemas';
import { parseIdempotencyKey } from '../services/idempotent-start';
import { rerunRun } from '../services/rerun-run';
import { streamNewRun } from '../stream/run-streams';
import { awaitRunEnd } from '../services/await-run-end';
import { parsePreferWait } from './responses';

/** Routes of the re-run action. */
export function rerunRoutes(deps: RouteDeps): Router {
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
      const waitSeconds = parsePreferWait(ctx.get('prefer'));
      const request = parseRequest(RerunRequestSchema, ctx.request.body ?? {});
      // As for a start: every refusal is plain JSON, before a stream opens (the key's stream cap first).
      const release = request.stream ? deps.streams.take(ctx.state.auth!.keyId) : undefined;
      let run;
      try {
        run = await rerunRun(deps, ctx.state.auth!, ctx.params.runId, request, idempotencyKey);
      } catch (err) {
        release?.();
        throw err;
      }
      if (release) return streamNewRun(ctx, deps, run, release);
      const ended = waitSeconds > 0 ? await awaitRunEnd(deps, run, waitSeconds * 1000) : null;
      if (ended) {
        ctx.set('Preference-Applied', `wait=${waitSeconds}`);
        ctx.body = ended;
        return;
      }
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
