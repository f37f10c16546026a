/**
 * GET /metrics: Prometheus exposition (no key; expose it only to your scraper's network in
 * production). Each scrape first refreshes the server-side gauges (lib/metrics): whether MongoDB
 * and Temporal answer, the backlog on the Temporal server of the run task queue and of its block
 * (D35) and webhook (D20) queues, and the runs open past their timeout. They are asked at scrape
 * time, bounded, so they hold whether or not any worker polls; a gauge Temporal could not answer
 * for is dropped rather than left stale.
 */
import Router from '@koa/router';
import type { AppDeps } from '../deps';
import {
  collectProcessMetrics,
  dependencyUp,
  metricsText,
  runsOpenPastTimeout,
  taskQueueBacklog,
  taskQueueBacklogAge,
} from '../../lib/metrics';

/** What a scrape uses: MongoDB's ping, the gateway's operational stats, the task queue and run timeout. */
export type MetricsRouteDeps = Pick<AppDeps, 'db' | 'gateway' | 'config'>;

/** How long a scrape waits for each dependency's answer (Prometheus's default scrape timeout is 10 s). */
const SCRAPE_CHECK_MS = 2_000;
/** A run's workflow should have ended by RUN_TIMEOUT_MS; past this much more it is stuck. */
const OPEN_RUN_MARGIN_MS = 10 * 60_000;

/** The metrics route. */
export function metricsRoutes(deps: MetricsRouteDeps): Router {
  collectProcessMetrics();
  const router = new Router();
  router.get('/metrics', async (ctx) => {
    await refreshServerSide(deps);
    const { contentType, body } = await metricsText();
    ctx.type = contentType;
    ctx.body = body;
  });
  return router;
}

async function refreshServerSide(deps: MetricsRouteDeps): Promise<void> {
  const openBefore = new Date(Date.now() - deps.config.runs.runTimeoutMs - OPEN_RUN_MARGIN_MS);
  const [mongo, temporal] = await Promise.allSettled([
    deps.db.command({ ping: 1 }, { timeoutMS: SCRAPE_CHECK_MS }),
    deps.gateway.operationalStats(SCRAPE_CHECK_MS, openBefore),
  ]);
  dependencyUp.set({ dependency: 'mongodb' }, mongo.status === 'fulfilled' ? 1 : 0);
  dependencyUp.set({ dependency: 'temporal' }, temporal.status === 'fulfilled' ? 1 : 0);
  taskQueueBacklog.reset();
  taskQueueBacklogAge.reset();
  runsOpenPastTimeout.reset();
  if (temporal.status !== 'fulfilled') return;
  for (const { taskQueue, taskType, count, ageSeconds } of temporal.value.backlog) {
    taskQueueBacklog.set({ task_queue: taskQueue, task_type: taskType }, count);
    taskQueueBacklogAge.set({ task_queue: taskQueue, task_type: taskType }, ageSeconds);
  }
  runsOpenPastTimeout.set(temporal.value.openPastTimeout);
}
