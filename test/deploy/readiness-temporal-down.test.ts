// Readiness while Temporal is down: the API stays ready (/readyz 200, Temporal reported `unavailable` in its
// body and in wrs_dependency_up), because reads served from MongoDB alone go on working (a finished run is
// 200 from its record), while a start answers 503 with Retry-After. A load balancer that took every replica out
// on a Temporal blip would refuse those reads too. On a private stack: the test stops its own Temporal.
import assert from 'node:assert/strict';
import { call } from '../support/http';
import { waitForRun } from '../support/fixtures';
import { assertEnvelope, startRunsInFlight, usePrivateStack } from '../reliability/outage-support';

describe('readiness while Temporal is down', function () {
  this.timeout(120_000);
  // No in-memory copy of finished runs: the read below comes from MongoDB.
  const stack = usePrivateStack('readiness', { FINISHED_RUN_CACHE_MS: '0' });

  it('/readyz stays 200 and a finished run reads 200, while a start is 503 with Retry-After', async () => {
    const { svc } = stack;
    const { key, runIds } = await startRunsInFlight(stack, 1, 10);
    const finished = await waitForRun(svc.url, key, runIds[0]);
    assert.equal(finished.status, 'completed');
    const ready = await call(svc.url, 'GET', '/readyz');
    assert.deepEqual(ready.body, { status: 'ready', mongodb: 'ok', temporal: 'ok' });

    await stack.temporal!.kill();
    stack.temporal = undefined;

    const readyz = await call(svc.url, 'GET', '/readyz');
    assert.equal(readyz.status, 200, JSON.stringify(readyz.body));
    assert.deepEqual(readyz.body, { status: 'ready', mongodb: 'ok', temporal: 'unavailable' });
    const metrics = await fetch(`${svc.url}/metrics`).then((r) => r.text());
    assert.match(metrics, /^wrs_dependency_up\{dependency="temporal"\} 0$/m);
    assert.match(metrics, /^wrs_dependency_up\{dependency="mongodb"\} 1$/m);

    const read = await call(svc.url, 'GET', `/api/v1/runs/${runIds[0]}`, { key });
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.status, 'completed');

    const start = await call(svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'ask', inputs: { topic: 'refused' } },
    });
    assertEnvelope(start, 503, 'service_unavailable');
    assert.match(start.headers.get('retry-after') ?? '', /^\d+$/);
  });
});
