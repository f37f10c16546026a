/**
 * The workflow tracing interceptors load the SDK's OpenTelemetry interceptors only for a traced
 * run (workflows/tracing-otel.ts says why), so they name the SDK's methods and header themselves:
 * these must stay the SDK's, or a traced run would lose spans after an SDK upgrade.
 */
import assert from 'node:assert/strict';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import { TRACE_HEADER as SDK_TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import { TRACED_METHODS, TRACE_HEADER, interceptors } from '../../workflows/tracing-interceptors';

/** The methods a class's instances have (its prototype chain, as the SDK composes interceptors). */
function methodsOf(cls: { prototype: object }): string[] {
  const names = new Set<string>();
  for (
    let p: object | null = cls.prototype;
    p && p !== Object.prototype;
    p = Object.getPrototypeOf(p) as object | null
  )
    for (const name of Object.getOwnPropertyNames(p)) if (name !== 'constructor') names.add(name);
  return [...names].sort();
}

describe('workflow tracing interceptors', () => {
  it("list exactly the SDK's interceptor methods and its trace header", () => {
    assert.deepEqual(
      [...TRACED_METHODS.inbound].sort(),
      methodsOf(OpenTelemetryInboundInterceptor),
    );
    assert.deepEqual(
      [...TRACED_METHODS.outbound].sort(),
      methodsOf(OpenTelemetryOutboundInterceptor),
    );
    assert.deepEqual(
      [...TRACED_METHODS.internals].sort(),
      methodsOf(OpenTelemetryInternalsInterceptor),
    );
    assert.equal(TRACE_HEADER, SDK_TRACE_HEADER);
  });

  it('pass every call of an untraced run straight on', async () => {
    const { inbound, outbound, internals } = interceptors();
    const next = (input: unknown) => ({ passed: input });
    const start = { headers: {}, args: [] } as never;
    assert.deepEqual(await inbound![0].execute!(start, next as never), { passed: start });
    assert.deepEqual(outbound![0].scheduleActivity!({ a: 1 } as never, next as never), {
      passed: { a: 1 },
    });
    assert.deepEqual(internals![0].dispose!({} as never, next as never), { passed: {} });
  });
});
