/** Liveness and readiness probes (no key needed). */
import Router from '@koa/router';
import type { Health, Readiness } from '../contract/http-schemas';
import type { RouteDeps } from '../deps';

/** What the probes use: the drain (readiness fails from SIGTERM on), MongoDB and the gateway's ping. */
export type HealthRouteDeps = Pick<RouteDeps, 'drain' | 'db' | 'gateway'>;
import { ServiceUnavailableError } from '../../domain/errors';
import { dependencyUp } from '../../lib/metrics';

/**
 * /healthz answers while the process runs. /readyz answers 200 while MongoDB answers: every key
 * check, every read of a finished run and every listing needs it, and none of them needs Temporal,
 * so a Temporal outage must not take the replica out of its load balancer (starts and live reads
 * answer 503 with Retry-After by themselves then). Temporal's state is in the body, `temporal`:
 * `ok` or `unavailable`, and in the `wrs_dependency_up` gauge, for monitoring. A process that has
 * not reached Temporal once since it started is not ready (it still answers /healthz, so its
 * orchestrator does not restart it): one started during an outage joins its load balancer when
 * Temporal answers, and one that can never reach it (a wrong address or namespace) never takes
 * the place of the replicas a rollout would stop.
 */
export function healthRoutes(deps: HealthRouteDeps): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' } satisfies Health;
  });
  router.get('/readyz', async (ctx) => {
    // From SIGTERM on (api/drain.ts) this process is leaving: out of rotation before it stops accepting.
    if (deps.drain.draining)
      throw new ServiceUnavailableError('Not ready: this API process is shutting down.');
    // Both are asked at once and both answers awaited, so the answer names each one that is down.
    // Each is bounded: MongoDB by the driver's server selection (MONGODB_SERVER_SELECTION_TIMEOUT_MS),
    // Temporal by this deadline (a refused connection fails in ~1 s, api/temporal/run-gateway.ts).
    const [mongo, temporal] = await Promise.allSettled([
      deps.db.command({ ping: 1 }),
      deps.gateway.ping(2_000),
    ]);
    const mongoUp = mongo.status === 'fulfilled';
    const temporalUp = temporal.status === 'fulfilled';
    dependencyUp.set({ dependency: 'mongodb' }, mongoUp ? 1 : 0);
    dependencyUp.set({ dependency: 'temporal' }, temporalUp ? 1 : 0);
    if (!deps.gateway.attached)
      throw new ServiceUnavailableError(
        'Not ready: Temporal has not answered since this API process started.',
      );
    if (!mongoUp)
      throw new ServiceUnavailableError(
        temporalUp
          ? 'Not ready: MongoDB does not answer.'
          : 'Not ready: MongoDB and Temporal do not answer.',
      );
    ctx.body = {
      status: 'ready',
      mongodb: 'ok',
      temporal: temporalUp ? 'ok' : 'unavailable',
    } satisfies Readiness;
  });
  return router;
}
