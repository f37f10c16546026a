// The production worker entry (worker/main.ts) as the image runs it: the workflow code from the
// prebuilt bundle file (startWorkerProcess passes the suite's), its own metrics on WORKER_METRICS_PORT and the Temporal SDK's on WORKER_SDK_METRICS_PORT,
// both under the names deploy/prometheus/alerts.yml and the Grafana dashboard query.
import assert from 'node:assert/strict';
import { freePort } from '../../tools/stack/ports';
import { newAccount } from '../support/accounts';
import { firstText, greetingWorkflow, publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startService, type TestService } from '../support/service';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

describe('worker/main.ts in production configuration', function () {
  this.timeout(180_000);
  let svc: TestService | undefined;
  let worker: WorkerProcess | undefined;
  after(async () => {
    await worker?.kill();
    await svc?.close();
  });

  it('runs a run from the bundle file and serves its own and the SDK metrics', async () => {
    const [ownPort, sdkPort] = [await freePort(), await freePort()];
    svc = await startService({ worker: false });
    worker = startWorkerProcess(svc.config, {
      env: {
        WORKER_METRICS_PORT: String(ownPort),
        WORKER_SDK_METRICS_PORT: String(sdkPort),
      },
    });

    const { key } = await newAccount(svc.store.collections);
    await publish(svc.url, key, greetingWorkflow('prod-entry'));
    const start = await call(svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'prod-entry', inputs: { name: 'Ada' } },
    });
    assert.equal(start.status, 202, JSON.stringify(start.body));
    const run = await waitForRun(svc.url, key, start.body.run_id, 90_000).catch((err: Error) => {
      throw new Error(`${err.message}\nworker stderr:\n${worker?.stderr()}`);
    });
    assert.equal(firstText(run, 'greeting'), 'Hello, Ada!');

    const metrics = (port: number) =>
      fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
    // The worker counts the run's end when its last activity finishes; the SDK exports on its own schedule.
    await waitFor(
      async () =>
        (await metrics(ownPort)).match(/^wrs_runs_ended_total\{status="completed"\} [1-9]/m)
          ? true
          : undefined,
      {
        what: 'wrs_runs_ended_total on WORKER_METRICS_PORT',
      },
    );
    const sdk = await waitFor(
      async () => {
        const text = await metrics(sdkPort).catch(() => '');
        return /^temporal_workflow_task_schedule_to_start_latency_seconds_bucket/m.test(text)
          ? text
          : undefined;
      },
      { timeoutMs: 30_000, what: 'temporal_* metrics on WORKER_SDK_METRICS_PORT' },
    );
    assert.match(sdk, /^temporal_worker_task_slots_available\{/m);
    // The run's one activity is its end, a local activity (D7).
    assert.match(sdk, /^temporal_local_activity_execution_latency_seconds_bucket/m);
  });
});
