/** GET /metrics: Prometheus exposition (no key; expose it only to your scraper's network in production). */
import Router from '@koa/router';
import { collectProcessMetrics, metricsText } from '../../lib/metrics';

/** The metrics route. */
export function metricsRoutes(): Router {
  collectProcessMetrics();
  const router = new Router();
  router.get('/metrics', async (ctx) => {
    const { contentType, body } = await metricsText();
    ctx.type = contentType;
    ctx.body = body;
  });
  return router;
}
