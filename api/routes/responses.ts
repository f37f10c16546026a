/** POST /api/v1/responses: start a run, answered with 202 (async) or the run's event stream (`stream: true`). */
import Router from '@koa/router';
import type { GuardDeps } from '../deps';
import { authenticate } from '../middleware/authenticate';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import { parseRequest, StartRequestSchema } from '../contract/request-schemas';
import {
  parseIdempotencyKey,
  startIdempotent,
  type IdempotentStartDeps,
} from '../runs/idempotent-start';
import { startRun } from '../runs/start-run';
import { answerStart, type AnswerStartDeps } from './answer-start';
import { startDuration } from '../../lib/metrics';

/** What the start route uses: its guards, a start (idempotent or not), and the answer's stream or wait. */
export type ResponsesRouteDeps = GuardDeps & IdempotentStartDeps & AnswerStartDeps;

/** Routes of the responses resource. */
export function responsesRoutes(deps: ResponsesRouteDeps): Router {
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
      const request = parseRequest(StartRequestSchema, ctx.request.body);
      await answerStart(ctx, deps, {
        stream: request.stream,
        // D18: with a key, a repeat gets the first request's run (the same 202 body, or its stream from event 0).
        start: (wait) =>
          idempotencyKey
            ? startIdempotent(deps, ctx.state.auth!, request, idempotencyKey, { wait })
            : startRun(deps, ctx.state.auth!, request, { wait }),
        onStarted: () => timer(),
      });
    },
  );
  return router;
}
