/**
 * The OpenTelemetry side of the workflow tracing interceptors (workflows/tracing-interceptors.ts),
 * in a module of its own so that only a traced workflow evaluates it: the workflow sandbox
 * evaluates a workflow's modules once per workflow execution, and these (with @opentelemetry/api,
 * core and sdk-trace-base, ~120 modules) were most of that work for every untraced run.
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type {
  WorkflowInboundCallsInterceptor,
  WorkflowInternalsInterceptor,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/** The SDK's three workflow tracing interceptors of one workflow execution. */
export interface OtelInterceptors {
  inbound: WorkflowInboundCallsInterceptor;
  outbound: WorkflowOutboundCallsInterceptor;
  internals: WorkflowInternalsInterceptor;
}

/** Builds them (registers the sandbox's tracer provider on first use, as the SDK does). */
export function otelInterceptors(): OtelInterceptors {
  return {
    inbound: new OpenTelemetryInboundInterceptor(),
    outbound: new OpenTelemetryOutboundInterceptor(),
    internals: new OpenTelemetryInternalsInterceptor(),
  };
}
