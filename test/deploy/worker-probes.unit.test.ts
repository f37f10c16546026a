// The worker's probes on WORKER_METRICS_PORT, which the Helm chart's liveness and readiness probes call:
// /healthz fails (503) after the event loop was blocked past the limit, /readyz follows the worker's state.
import assert from 'node:assert/strict';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveMetrics } from '../../worker/metrics-server';

describe('worker probes (worker/metrics-server.ts)', () => {
  let server: http.Server;
  let polling = true;
  const get = (p: string) =>
    fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${p}`);

  before(async () => {
    server = await serveMetrics(0, { ready: () => polling, maxLagMs: 300, host: '127.0.0.1' });
  });
  after(() => server.close());

  it('/healthz answers 200 while the event loop runs freely', async () => {
    const res = await get('/healthz');
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { status: string }).status, 'ok');
  });

  it('/healthz answers 503 after the event loop was blocked longer than the limit', async () => {
    // The probe's request is answered only after the loop is free again, as a kubelet's would be.
    const pending = get('/healthz');
    // Block the loop the way a CPU-bound synchronous call would.
    const until = Date.now() + 800;
    while (Date.now() < until) {
      /* busy: the event loop is blocked */
    }
    const res = await pending;
    assert.equal(res.status, 503);
    const body = (await res.json()) as { status: string; event_loop_lag_ms: number };
    assert.equal(body.status, 'event_loop_blocked');
    assert.ok(body.event_loop_lag_ms >= 300, JSON.stringify(body));
  });

  it('/readyz is 200 while the worker polls and 503 once it drains', async () => {
    polling = true;
    assert.equal((await get('/readyz')).status, 200);
    polling = false;
    const res = await get('/readyz');
    assert.equal(res.status, 503);
    assert.equal(((await res.json()) as { status: string }).status, 'not_polling');
  });

  it('/metrics still serves the exposition text', async () => {
    const res = await get('/metrics');
    assert.equal(res.status, 200);
    assert.match(await res.text(), /^# TYPE wrs_/m);
  });
});
