/**
 * Counts and times every request for Prometheus (wrs_http_requests_total,
 * wrs_http_request_duration_seconds): by method, the matched route's template (never the raw
 * path, which holds ids and, under /codec/, maybe a token) and the status actually sent. Placed
 * outside the error handler, so an error's status is the one its envelope went out with.
 */
import type { Middleware } from 'koa';
import { httpRequestDuration, httpRequests } from '../../lib/metrics';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The middleware; the duration ends when the response head is ready (a stream's SSE head). */
export function httpMetrics(): Middleware {
  return async (ctx, next) => {
    const stop = httpRequestDuration.startTimer();
    let status = 500;
    try {
      await next();
      status = ctx.status;
    } finally {
      const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      const labels = {
        method: METHODS.has(ctx.method) ? ctx.method : 'other',
        route: typeof route === 'string' ? route : 'unmatched',
      };
      httpRequests.inc({ ...labels, code: String(status) });
      stop({ ...labels, status_class: `${Math.floor(status / 100)}xx` });
    }
  };
}
