/**
 * Workflow interceptors of the OpenTelemetry tracing (lib/observability/tracing.ts), bundled with
 * every workflow but active only in a workflow whose start carries a trace context (a
 * `traceparent`: the API traces, OTEL_EXPORTER_OTLP_ENDPOINT). Why gated: the SDK's workflow interceptors draw span ids
 * from the workflow's seeded Math.random, which the run state also draws its item ids from; a run
 * started untraced (every run before tracing existed, every run with tracing off) must replay with
 * the same draws, so its interceptors stay out of the way. A traced run draws them on every replay
 * alike. Workflow commands are the same either way: the interceptors add headers and spans only.
 * The SDK's interceptors (and OpenTelemetry with them) are loaded only by a traced workflow: the
 * sandbox evaluates a workflow's modules once per execution, and loading them cost every run.
 */
import {
  defaultPayloadConverter,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowInternalsInterceptor,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import type { OtelInterceptors } from './tracing-otel';

/** The header the SDK's client interceptor carries the trace context in (its `TRACE_HEADER`). */
export const TRACE_HEADER = '_tracer-data';

/**
 * The methods of the SDK's interceptors (test/workflows/tracing-interceptors.unit.test.ts holds
 * them to the SDK's classes): listed here because the classes are loaded only for a traced run.
 */
export const TRACED_METHODS = {
  inbound: ['execute', 'handleSignal', 'handleUpdate', 'validateUpdate', 'handleQuery'],
  outbound: [
    'scheduleActivity',
    'scheduleLocalActivity',
    'startNexusOperation',
    'startChildWorkflowExecution',
    'continueAsNew',
    'signalWorkflow',
    'getLogAttributes',
    'getMetricTags',
  ],
  internals: ['dispose'],
} as const satisfies Record<keyof OtelInterceptors, readonly string[]>;

type Method = (input: unknown, next: (input: unknown) => unknown) => unknown;

/** Each listed method calls `target()`'s only while it is set; otherwise the call goes straight to `next`. */
function gated<T>(names: readonly string[], target: () => T | undefined): T {
  const wrapped: Record<string, Method> = {};
  for (const name of names) {
    wrapped[name] = (input, next) => {
      const on = target() as Record<string, Method> | undefined;
      return on ? on[name].call(on, input, next) : next(input);
    };
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

/**
 * The SDK's interceptors, evaluated and built only now (workflows/tracing-otel.ts says why).
 * Their constructors draw nothing from the workflow's Math.random, so building them at the start
 * rather than at the workflow's creation leaves a traced run's draws as they were.
 */
function loadOtel(): OtelInterceptors {
  // A require where it is needed: webpack bundles the module but evaluates it only on this call.
  return (require('./tracing-otel') as typeof import('./tracing-otel')).otelInterceptors();
}

export const interceptors = (): WorkflowInterceptors => {
  // Per workflow execution: set once its start's headers are seen (execute runs before any command).
  let otel: OtelInterceptors | undefined;
  const inbound = gated<WorkflowInboundCallsInterceptor>(
    TRACED_METHODS.inbound,
    () => otel?.inbound,
  );
  const execute = inbound.execute!.bind(inbound);
  return {
    inbound: [
      {
        ...inbound,
        execute: (input, next) => {
          if (startIsTraced(input)) otel = loadOtel();
          return execute(input, next);
        },
      },
    ],
    outbound: [
      gated<WorkflowOutboundCallsInterceptor>(TRACED_METHODS.outbound, () => otel?.outbound),
    ],
    internals: [
      gated<WorkflowInternalsInterceptor>(TRACED_METHODS.internals, () => otel?.internals),
    ],
  };
};
