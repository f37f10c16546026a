// A worker process (worker/main.ts) started while Temporal is unreachable answers its liveness probe at
// once: its side port listens before the start waits for Temporal (the chart's startupProbe gives it
// 5 minutes; a worker that listened only once connected was restarted through a longer outage).
// /readyz is 503 `not_polling` until it polls. Once Temporal is reachable (a forward to the stack's,
// opened on the port the worker was given) it polls, /readyz is 200, and it runs runs.
import assert from 'node:assert/strict';
import { freePort } from '../../tools/stack/ports';
import { newAccount } from '../support/accounts';
import { firstText, greetingWorkflow, publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startService, type TestService } from '../support/service';
import { openTcpForward, type TcpForward } from '../support/tcp-forward';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

describe('a worker process started while Temporal is unreachable', function () {
  this.timeout(120_000);
  let svc: TestService | undefined;
  let worker: WorkerProcess | undefined;
  let forward: TcpForward | undefined;
  after(async () => {
    await worker?.kill();
    await forward?.close();
    await svc?.close();
  });

  it('answers /healthz at once, /readyz 503 until it polls, then runs runs', async () => {
    svc = await startService({ worker: false });
    const [temporalPort, metricsPort] = [await freePort(), await freePort()];
    worker = startWorkerProcess(svc.config, {
      env: {
        TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`, // nothing listens there yet: Temporal is "down"
        WORKER_METRICS_PORT: String(metricsPort),
      },
    });
    const probe = (path: string) =>
      fetch(`http://127.0.0.1:${metricsPort}${path}`, { signal: AbortSignal.timeout(1_000) })
        .then(async (r) => ({ status: r.status, body: (await r.json()) as { status: string } }))
        .catch(() => undefined); // not listening yet
    const w = worker;
    const healthz = await waitFor(() => probe('/healthz'), {
      timeoutMs: 15_000,
      intervalMs: 200,
      what: `the worker's /healthz while Temporal is unreachable:\n${w.stderr()}`,
    });
    assert.equal(healthz.status, 200);
    assert.deepEqual(await probe('/readyz'), { status: 503, body: { status: 'not_polling' } });

    forward = await openTcpForward(temporalPort, svc.config.temporal.address);
    await waitFor(async () => ((await probe('/readyz'))?.status === 200 ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: `the worker's /readyz 200 once Temporal is reachable:\n${w.stderr()}`,
    });
    const { key } = await newAccount(svc.store.collections);
    await publish(svc.url, key, greetingWorkflow('worker-late'));
    const start = await call(svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'worker-late', inputs: { name: 'Ada' } },
    });
    assert.equal(start.status, 202, JSON.stringify(start.body));
    const run = await waitForRun(svc.url, key, start.body.run_id, 60_000);
    assert.equal(firstText(run, 'greeting'), 'Hello, Ada!');
  });
});
