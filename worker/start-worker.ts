/**
 * Starts a process's run workers from configuration (the run task queue's and the block queue's,
 * worker/create-worker.ts): their Temporal connection (with fail-over across the configured
 * frontends), the codec, the activities over the given store, and `run()`. The one
 * wiring used by the worker process (worker/main.ts, which `npm start` runs), the tests and the bench.
 */
import {
  NativeConnection,
  type Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { Config } from '../config';
import { connectTemporalWhenReachable } from '../lib/temporal-start';
import type { Store } from '../store/db';
import { payloadProtection } from '../lib/codec/data-converter';
import { startTracing } from '../lib/observability/tracing';
import { createRunWorkers } from './create-worker';
import { bundleInChildProcess } from './workflow-bundle';
import { warnWhileWaiting } from './runtime';

export interface RunningWorker {
  /** Settles when the worker has stopped: after stop(), or on SIGINT/SIGTERM (the SDK's runtime drains it). */
  done: Promise<void>;
  /** Drains the worker (activities get the grace time, then are cancelled) and closes its connection. */
  stop(): Promise<void>;
}

/**
 * Past the grace time, how long a shutdown may still take before the SDK gives up on it: an
 * activity stuck in a call that ignores cancellation can then never hold a stop (or a test) forever.
 */
const FORCE_AFTER_GRACE_MS = 10_000;

/**
 * How long the codec's first read of the key ring or of a run's secret waits out an unreachable
 * store (a restart, an election, an outage): as long as it lasts. Failing instead stops the whole
 * worker, since the SDK reports a task it could not decode through the same codec, and a worker
 * restarted into the outage fails the same way. A task that waits meanwhile times out on the
 * server and is given again; the waiting one finishes once the store is back, and the server
 * refuses its late completion. A shutdown during the wait ends at its force time.
 */
const CODEC_STORE_RETRY_MS = Infinity;

/** Connects, creates the workers and runs them; resolves once they are running (their end is `done`). */
export async function startWorker(
  config: Config,
  store: Pick<Store, 'collections' | 'db'>,
  opts: {
    /** A prebuilt bundle (the tests build one per suite); otherwise WORKFLOW_BUNDLE_PATH, or bundling at start in a child process. */
    workflowBundle?: WorkflowBundleWithSourceMap;
    /** Overrides WORKER_SHUTDOWN_GRACE_MS (tests stop workers often and fast). */
    shutdownGraceMs?: number;
  } = {},
): Promise<RunningWorker> {
  const stopTracing = startTracing(config.tracing, 'wrs-worker');
  // Without a bundle, webpack runs in a child process while we connect: its memory never stays here.
  const bundling =
    config.worker.workflowBundlePath || opts.workflowBundle
      ? Promise.resolve(opts.workflowBundle)
      : bundleInChildProcess();
  bundling.catch(() => undefined); // awaited below, or the connection failed first
  const connection = await connectTemporalWhenReachable(
    config.temporal,
    (options) => NativeConnection.connect(options),
    warnWhileWaiting('Temporal unreachable at start; waiting for it'),
  ).catch(async (err: unknown) => {
    await stopTracing();
    throw err;
  });
  const shutdownGraceTimeMs = opts.shutdownGraceMs ?? config.worker.shutdownGraceMs;
  let all: Worker[];
  try {
    const workflowBundle = await bundling;
    all = await createRunWorkers({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      collections: store.collections,
      db: store.db,
      config,
      // A WORKFLOW_BUNDLE_PATH is what the worker loads, as in production.
      ...(config.worker.workflowBundlePath
        ? { workflowBundlePath: config.worker.workflowBundlePath }
        : { workflowBundle }),
      shutdownGraceTimeMs,
      shutdownForceTimeMs: shutdownGraceTimeMs + FORCE_AFTER_GRACE_MS,
      payloads: payloadProtection(config, store.db, { storeRetryMs: CODEC_STORE_RETRY_MS }),
    });
  } catch (err) {
    await connection.close();
    await stopTracing();
    throw err;
  }
  const stopAll = () => {
    for (const w of all) if (w.getState() === 'RUNNING') w.shutdown();
  };
  // One worker failing stops the others; the connection closes once all have stopped.
  const running = Promise.allSettled(
    all.map((w) =>
      w.run().catch((err: unknown) => {
        stopAll();
        throw err;
      }),
    ),
  ).then((results) => {
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  });
  const done = running.finally(() => connection.close()).finally(stopTracing);
  return {
    done,
    async stop() {
      stopAll();
      await done;
    },
  };
}
