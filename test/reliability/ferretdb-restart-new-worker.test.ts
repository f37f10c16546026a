/**
 * A worker that meets a run for the first time while the database is down. Its codec has neither
 * the key ring nor the run's secret (D32, D39) and cannot read them, so it cannot open the task;
 * the SDK then reports that failure through the same codec, and a second failure there stopped the
 * whole worker. The worker's codec now waits out the outage, however long (worker/start-worker.ts,
 * CODEC_STORE_RETRY_MS): after a short one the run completes; after a long one the worker is still
 * there to run the next. A private stack, as in ferretdb-restart.test.ts.
 */
import assert from 'node:assert/strict';
import { startFerretDb } from '../../tools/stack';
import { temporalClient } from '../support/service';
import { call, waitFor } from '../support/http';
import { waitForRun } from '../support/fixtures';
import { startRunsInFlight, topicOf, usePrivateStack } from './outage-support';

/** The provider's answer takes this long, so the first attempt is still calling when its worker stops. */
const PROVIDER_DELAY_MS = 6_000;
/**
 * A short outage once the new worker holds the task: four times the driver's server selection (2 s,
 * store/db.ts), past the two failed reads in which a worker without the wait stopped (measured:
 * about 4 s after it took the task).
 */
const SHORT_OUTAGE_MS = 8_000;
/**
 * A long one: past the two reads in which a worker that waited 30 s at most stopped (the task's,
 * then the failure's report: measured 62 s after it took the task).
 */
const LONG_OUTAGE_MS = 65_000;
/** Temporal's PendingActivityState STARTED: a worker has taken the attempt. */
const STARTED = 2;

describe('reliability: a worker new to a run while the database is down', function () {
  this.timeout(240_000);
  const stack = usePrivateStack('ferretdb-new-worker', {});

  /**
   * A run's call in flight; its worker stopped, the database stopped, a new worker (a process's
   * codec: nothing cached) taking the retried attempt; the database back `outageMs` after that.
   */
  async function outageMetByNewWorker(outageMs: number) {
    const { svc: s } = stack;
    const {
      key,
      runIds: [runId],
    } = await startRunsInFlight(stack, 1, PROVIDER_DELAY_MS);
    // The worker that knew the run goes (its attempt is cancelled after the 1 s grace and retried).
    await s.stopWorker();
    const m = stack.mongo!;
    const port = Number(new URL(m.uri).port);
    await m.stop();
    stack.mongo = undefined;

    await s.startWorker();
    const handle = temporalClient(s).workflow.getHandle(runId);
    await waitFor(
      async () => {
        const [attempt] = (await handle.describe()).raw.pendingActivities ?? [];
        return ((attempt?.attempt ?? 0) >= 2 && Number(attempt?.state) === STARTED) || undefined;
      },
      { what: 'the new worker taking the retried attempt', timeoutMs: 60_000 },
    );
    const takenAt = Date.now();
    await waitFor(async () => Date.now() - takenAt >= outageMs || undefined, {
      what: 'the outage to outlast a worker without the wait',
      timeoutMs: outageMs + 5_000,
      intervalMs: 500,
    });
    stack.mongo = await startFerretDb({ dataDir: m.dataDir, port });
    return { key, runId };
  }

  it('waits for the database to open the run’s task instead of stopping, then completes the run', async () => {
    const { key, runId } = await outageMetByNewWorker(SHORT_OUTAGE_MS);
    const run = await waitForRun(stack.svc.url, key, runId, 60_000);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
  });

  it('keeps waiting through a long outage: the worker runs on, the run’s node spends its attempts', async () => {
    const { key, runId } = await outageMetByNewWorker(LONG_OUTAGE_MS);
    // Each retried attempt waited too, until Temporal timed it out (10 s without a heartbeat): a
    // minute spends the node's attempts (five), and the run ends failed, billed its start fee alone
    // (docs/outages.md).
    const run = await waitForRun(stack.svc.url, key, runId, 60_000);
    assert.equal(run.status, 'failed');
    const attempts = stack.svc.config.runs.nodeMaxAttempts;
    assert.match(String(run.error), new RegExp(`gave up after ${attempts} attempt\\(s\\)`));
    assert.equal(run.total_cost, stack.svc.config.runs.startFeeUsd);
    // D36: the call the stopped worker had in flight was made: it counts (its checkpoint says so).
    assert.equal(run.usage.provider_calls, 1);
    // The same worker, never restarted, runs what comes next.
    const next = await call(stack.svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'ask', inputs: { topic: topicOf(1, 10) } },
    });
    assert.equal(next.status, 202, JSON.stringify(next.body));
    const done = await waitForRun(stack.svc.url, key, next.body.run_id, 60_000);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
  });
});
