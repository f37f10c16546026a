// An API process (api/main.ts) started while Temporal is unreachable listens at once: /healthz answers
// (the chart's startupProbe gives it 60 s, so a process that waited for Temporal before listening was
// restarted again and again through an outage longer than that), /readyz is 200 by MongoDB alone with
// Temporal `unavailable`, a finished run reads from its record, and a start answers 503
// service_unavailable with Retry-After, as during an outage. Once Temporal is reachable (a forward to
// the stack's, opened on the port the process was given) the same process sets Temporal up and runs.
import assert from 'node:assert/strict';
import { freePort } from '../../tools/stack/ports';
import { newAccount } from '../support/accounts';
import { expectError } from '../support/api-assert';
import { startApiProcess, type ApiProcess } from '../support/api-process';
import { firstText, greetingWorkflow, publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startService, type TestService } from '../support/service';
import { openTcpForward, type TcpForward } from '../support/tcp-forward';
import { testConfig } from '../support/backend';
import { listenApi } from '../../api/start-api';
import { createLogger } from '../../api/logger';

describe('an API process started while Temporal is unreachable', function () {
  this.timeout(120_000);
  let svc: TestService | undefined;
  let api: ApiProcess | undefined;
  let forward: TcpForward | undefined;
  after(async () => {
    await api?.kill();
    await forward?.close();
    await svc?.close();
  });

  it('answers its probes and MongoDB reads at once, 503 to starts, and runs once Temporal answers', async () => {
    svc = await startService(); // its worker runs the runs the process below starts
    const { key } = await newAccount(svc.store.collections);
    await publish(svc.url, key, greetingWorkflow('temporal-late'));
    const before = await call(svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'temporal-late', inputs: { name: 'Ada' } },
    });
    assert.equal(before.status, 202, JSON.stringify(before.body));
    await waitForRun(svc.url, key, before.body.run_id);

    const temporalPort = await freePort(); // nothing listens there yet: Temporal is "down"
    // Resolves once the process logs "API listening" (it waited for Temporal before: no line in 15 s).
    api = await startApiProcess(svc.config, {
      env: { TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}` },
      readyTimeoutMs: 15_000,
      until: 'listening',
    });
    const out = api;
    assert.equal((await call(api.url, 'GET', '/healthz')).status, 200);
    // Not ready until Temporal answers once: a rollout into a Temporal it cannot reach (a wrong
    // address) must not replace the replicas that serve.
    expectError(await call(api.url, 'GET', '/readyz'), {
      status: 503,
      type: 'server_error',
      code: 'service_unavailable',
      message: ['Temporal has not answered since this API process started'],
    });
    const read = await call(api.url, 'GET', `/api/v1/runs/${before.body.run_id}`, { key });
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(firstText(read.body, 'greeting'), 'Hello, Ada!');
    const refused = await call(api.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'temporal-late', inputs: { name: 'Bob' } },
    });
    expectError(refused, { status: 503, type: 'server_error', code: 'service_unavailable' });
    assert.match(refused.headers.get('retry-after') ?? '', /^\d+$/);
    await waitFor(
      async () => (/Temporal unreachable at start/.test(out.output()) ? true : undefined),
      {
        what: `"Temporal unreachable at start; waiting for it" in the API's log:\n${out.output()}`,
      },
    );

    forward = await openTcpForward(temporalPort, svc.config.temporal.address);
    // Connected, search attributes checked, retention schedule ensured (D29): then it says so.
    await waitFor(async () => (/"Temporal connected"/.test(out.output()) ? true : undefined), {
      timeoutMs: 30_000,
      what: `"Temporal connected" in the API's log:\n${out.output()}`,
    });
    const ready = await call(api.url, 'GET', '/readyz');
    assert.deepEqual(ready.body, { status: 'ready', mongodb: 'ok', temporal: 'ok' });
    const start = await call(api.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'temporal-late', inputs: { name: 'Bob' } },
    });
    assert.equal(start.status, 202, JSON.stringify(start.body));
    const run = await waitForRun(api.url, key, start.body.run_id);
    assert.equal(firstText(run, 'greeting'), 'Hello, Bob!');
  });

  it('shuts down while it still waits for Temporal: the wait ends, api.temporal rejects', async () => {
    const config = await testConfig({ TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` });
    const waiting = await listenApi(config, createLogger('silent'));
    assert.equal((await call(waiting.url, 'GET', '/healthz')).status, 200);
    const outcome = waiting.temporal.then(
      () => 'connected',
      () => 'ended',
    );
    const closing = Date.now();
    await waiting.close();
    // Not held by the connection try under way (its connect timeout is 10 s).
    assert.ok(Date.now() - closing < 5_000, `close took ${Date.now() - closing} ms`);
    assert.equal(await outcome, 'ended');
    assert.throws(() => waiting.connection, /Temporal has not answered yet/);
  });
});
