/**
 * A worker that meets a run for the first time while the database is down. Its codec has neither
 * the key ring nor the run's secret (D32, D39) and cannot read them, so it cannot open the task;
 * the SDK then reports that failure through the same codec, and a second failure there stopped the
 * whole worker. The worker's codec now waits out the outage (worker/start-worker.ts,
 * CODEC_STORE_RETRY_MS) and the run completes once the database is back. A private stack, as in
 * ferretdb-restart.test.ts.
 */
import assert from 'node:assert/strict';
import { startFerretDb } from '../../tools/stack';
import { temporalClient } from '../support/service';
import { waitFor } from '../support/http';
import { waitForRun } from '../support/fixtures';
import { startRunsInFlight, usePrivateStack } from './outage-support';

/** The provider's answer takes this long, so the first attempt is still calling when its worker stops. */
const PROVIDER_DELAY_MS = 6_000;
/**
 * How long the database stays down once the new worker holds the task: four times the driver's
 * server selection (2 s, store/db.ts), past the two failed reads in which a worker without the
 * wait stopped (measured: about 4 s after it took the task).
 */
const OUTAGE_AFTER_TAKEN_MS = 8_000;
/** Temporal's PendingActivityState STARTED: a worker has taken the attempt. */
const STARTED = 2;

describe('reliability: a worker new to a run while the database is down', function () {
  this.timeout(150_000);
  const stack = usePrivateStack('ferretdb-new-worker', {});

  it('waits for the database to open the run’s task instead of stopping, then completes the run', async () => {
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

    // A new worker process's codec: nothing cached. It takes the retried attempt while the database is down.
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
    await waitFor(async () => Date.now() - takenAt >= OUTAGE_AFTER_TAKEN_MS || undefined, {
      what: 'the outage to outlast a worker without the wait',
      timeoutMs: OUTAGE_AFTER_TAKEN_MS + 5_000,
    });

    stack.mongo = await startFerretDb({ dataDir: m.dataDir, port });
    const run = await waitForRun(s.url, key, runId, 60_000);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
  });
});
