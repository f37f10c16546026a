/** POST /api/v1/responses: start a run, answered with 202 (async) or the run's event stream (`stream: true`). */
import Router from '@koa/router';
import type { RouteDeps } from '../deps';
import { authenticate } from '../middleware/authenticate';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import {
  parseRequest,
  StartRequestSchema,
  type AsyncStartResponse,
} from '../contract/request-schemas';
import { parseIdempotencyKey, startIdempotent } from '../services/idempotent-start';
import { startRun } from '../services/start-run';
import { streamNewRun } from '../stream/run-streams';
import { awaitRunEnd } from '../services/await-run-end';
import { startDuration } from '../../lib/metrics';

/** Routes of the responses resource. */
export function responsesRoutes(deps: RouteDeps): Router {
  const router = new Router();
  router.post(
    '/api/v1/responses',
    authenticate(deps),
    rateLimit(deps, 'starts'), // D16: a refused start is refused before anything is read, started or billed
    jsonBody({
      limitBytes: deps.config.api.maxJsonBodyBytes,
      maxDepth: deps.config.api.maxJsonDepth,
    }),
    async (ctx) => {
      const timer = startDuration.startTimer();
      const idempotencyKey = parseIdempotencyKey(ctx.req.headers['idempotency-key']);
      const waitSeconds = parsePreferWait(ctx.get('prefer'));
      const request = parseRequest(StartRequestSchema, ctx.request.body);
      // Everything that can refuse the start happens before the stream opens, so refusals are plain JSON errors.
      // The key's stream cap first: a 429 `too_many_streams` starts and bills nothing.
      const release = request.stream ? deps.streams.take(ctx.state.auth!.keyId) : undefined;
      let run;
      try {
        // D18: with a key, a repeat gets the first request's run (the same 202 body, or its stream from event 0).
        run = idempotencyKey
          ? await startIdempotent(deps, ctx.state.auth!, request, idempotencyKey)
          : await startRun(deps, ctx.state.auth!, request);
      } catch (err) {
        release?.();
        throw err;
      }
      timer();
      if (release) return streamNewRun(ctx, deps, run, release);
      // D28: hold the answer until the run ends or the wait is over; an ended run answers 200 with its record.
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

/** D28: the seconds of `Prefer: wait=N` (at most 60; 0 without the preference). */
export function parsePreferWait(header: string): number {
  const match = /(?:^|[,;\s])wait\s*=\s*(\d{1,6})\b/i.exec(header);
  return match ? Math.min(60, Number(match[1])) : 0;
}
