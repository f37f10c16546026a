/**
 * OpenTelemetry tracing (off unless OTEL_EXPORTER_OTLP_ENDPOINT is set): one tracer provider per
 * process exporting over OTLP/HTTP (JSON) to `<endpoint>/v1/traces`, the W3C trace-context
 * propagator (which carries the context through Temporal's headers) and an AsyncLocalStorage
 * context manager (so a span started by the HTTP middleware is the parent of the workflow start).
 * API and worker share the process in tests: the globals are registered once and counted.
 * Spans carry route templates, node types, provider names and origins only, never inputs.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  NoopSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';

export interface TracingConfig {
  /** OTLP/HTTP base URL (the collector's :4318); unset: no spans are recorded or sent. */
  otlpEndpoint?: string;
}

interface Active {
  processor: SpanProcessor;
  provider: BasicTracerProvider;
  resource: Resource;
  users: number;
}

let active: Active | undefined;

/** Starts tracing if configured (idempotent per process); the returned stop flushes and, for the last user, unregisters. */
export function startTracing(config: TracingConfig, serviceName: string): () => Promise<void> {
  if (!config.otlpEndpoint) return async () => undefined;
  if (!active) {
    const resource = new Resource({ 'service.name': serviceName });
    const exporter = new OTLPTraceExporter({
      url: `${config.otlpEndpoint.replace(/\/+$/, '')}/v1/traces`,
    });
    const processor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1_000 });
    const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    active = { processor, provider, resource, users: 0 };
  }
  const mine = active;
  mine.users++;
  let stopped = false;
  return async () => {
    if (stopped) return;
    stopped = true;
    await mine.provider.forceFlush();
    if (--mine.users > 0) return;
    if (active === mine) active = undefined;
    await mine.provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  };
}

const noop = new NoopSpanProcessor();
const noResource = Resource.empty();

/**
 * Where the workflow sandbox's spans go (its sink, worker/create-worker.ts): the active
 * processor at export time, so a worker created before tracing started still exports.
 */
export const workflowSpanProcessor: SpanProcessor = {
  onStart: () => undefined,
  onEnd: (span) => (active?.processor ?? noop).onEnd(span),
  forceFlush: async () => active?.processor.forceFlush(),
  shutdown: async () => undefined,
};

/** The resource the workflow spans are given (the worker's). */
export function tracingResource(): Resource {
  return active?.resource ?? noResource;
}
