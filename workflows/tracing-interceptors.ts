/**
 * Workflow interceptors of the OpenTelemetry tracing (lib/observability/tracing.ts), bundled with
 * every workflow but active only in a workflow whose start carries a trace context (a
 * `traceparent`: the API traces, OTEL_EXPORTER_OTLP_ENDPOINT). Why gated: the SDK's workflow interceptors draw span ids
 * from the workflow's seeded Math.random, which the run state also draws its item ids from; a run
 * started untraced (every run before tracing existed, every run with tracing off) must replay with
 * the same draws, so its interceptors stay out of the way. A traced run draws them on every replay
 * alike. Workflow commands are the same either way: the interceptors add headers and spans only.
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import { TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import {
  defaultPayloadConverter,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowInternalsInterceptor,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

type AnyInterceptor = Record<string, unknown>;
type Method = (input: unknown, next: (input: unknown) => unknown) => unknown;

/** Each of `target`'s methods runs only while `on()`; otherwise the call goes straight to `next`. */
function gated<T>(target: T, on: () => boolean): T {
  const wrapped: AnyInterceptor = {};
  let proto: object | null = Object.getPrototypeOf(target) as object | null;
  while (proto && proto !== Object.prototype) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const fn = (target as AnyInterceptor)[name];
      if (name === 'constructor' || typeof fn !== 'function' || name in wrapped) continue;
      wrapped[name] = (input: unknown, next: (input: unknown) => unknown) =>
        on() ? (fn as Method).call(target, input, next) : next(input);
    }
    proto = Object.getPrototypeOf(proto) as object | null;
  }
  return wrapped as T;
}

/**
 * Whether the start carries a W3C trace context. The SDK's client interceptor always adds the
 * header; with tracing off in the API it holds an empty carrier.
 */
function startIsTraced(input: WorkflowExecuteInput): boolean {
  const header = input.headers[TRACE_HEADER];
  if (!header) return false;
  try {
    const carrier = defaultPayloadConverter.fromPayload<unknown>(header);
    return typeof (carrier as { traceparent?: unknown } | null)?.traceparent === 'string';
  } catch {
    return false;
  }
}

export const interceptors = (): WorkflowInterceptors => {
  // Per workflow execution: set once its start's headers are seen (execute runs before any command).
  let traced = false;
  const inbound = gated<WorkflowInboundCallsInterceptor>(
    new OpenTelemetryInboundInterceptor(),
    () => traced,
  );
  const execute = inbound.execute?.bind(inbound);
  return {
    inbound: [
      {
        ...inbound,
        execute: (input, next) => {
          traced = startIsTraced(input);
          return execute ? execute(input, next) : next(input);
        },
      },
    ],
    outbound: [
      gated<WorkflowOutboundCallsInterceptor>(new OpenTelemetryOutboundInterceptor(), () => traced),
    ],
    internals: [
      gated<WorkflowInternalsInterceptor>(new OpenTelemetryInternalsInterceptor(), () => traced),
    ],
  };
};
