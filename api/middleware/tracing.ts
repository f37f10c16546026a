/**
 * A server span per request (OpenTelemetry; lib/observability/tracing.ts), the parent of the
 * workflow start's span and through it of the workflow's and the provider call's. Named by method
 * and the matched route's template, never the raw path (ids; under /codec/, a token); attributes
 * hold the method, template and status only. A caller's `traceparent` is ignored: callers are
 * untrusted, and would otherwise choose our trace ids and sampling.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Middleware } from 'koa';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function tracing(): Middleware {
  return async (ctx, next) => {
    const tracer = trace.getTracer('wrs-api');
    const method = METHODS.has(ctx.method) ? ctx.method : 'other';
    await tracer.startActiveSpan(
      method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
      ROOT_CONTEXT,
      async (span) => {
        let status = 500;
        try {
          await next();
          status = ctx.status;
        } finally {
          const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
          const template = typeof route === 'string' ? route : 'unmatched';
          span.updateName(`${method} ${template}`);
          span.setAttributes({ 'http.route': template, 'http.response.status_code': status });
          if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        }
      },
    );
  };
}
