/** Worker entry: `npm run worker` (and `npm start`'s worker). Executes runs until SIGINT/SIGTERM, then drains. */
import { loadConfig } from '../config';
import { connectStoreWhenReachable } from '../store/db';
import {
  installWorkerRuntime,
  logConfigurationWarnings,
  tuneWorkerHeap,
  warnWhileWaiting,
} from './runtime';
import { serveMetrics } from './metrics-server';
import { startWorker } from './start-worker';

async function main(): Promise<void> {
  // Started by `npm start` (an IPC channel to it): when that parent dies, even by SIGKILL, the channel
  // closes; exit (draining, once the worker runs) rather than run on as an orphan.
  let running = false;
  const orphaned = () => (running ? process.kill(process.pid, 'SIGTERM') : process.exit(0));
  if (process.send) process.once('disconnect', orphaned);
  const config = loadConfig(process.env);
  tuneWorkerHeap(config.worker.heapGrowingPercent);
  installWorkerRuntime(config.logLevel, config.worker.sdkMetricsPort);
  logConfigurationWarnings(config.warnings);
  // Ready (the /readyz probe) while the worker polls: not before it does, nor from the drain's
  // start (SIGTERM/SIGINT) on. The port listens first, so /healthz answers while the start still
  // waits for MongoDB or Temporal: a worker started during an outage is not restarted by its
  // orchestrator's startup probe, again and again (docs/deploy.md "Health checks").
  let polling = false;
  const metrics = config.worker.metricsPort
    ? await serveMetrics(config.worker.metricsPort, { ready: () => polling })
    : undefined;
  const store = await connectStoreWhenReachable(
    { ...config.mongo, appName: 'wrs-worker' },
    warnWhileWaiting('MongoDB unreachable at start; waiting for it'),
  );
  const worker = await startWorker(config, store);
  polling = true;
  const draining = () => (polling = false);
  process.once('SIGTERM', draining).once('SIGINT', draining);
  worker.done.then(draining, draining);
  running = true;
  // The SDK's runtime handles SIGINT/SIGTERM: it drains the worker, and `done` settles after that.
  await worker.done;
  metrics?.close();
  await store.close();
  // The listener holds the IPC channel open, and with it the process: drained, it has no more use.
  process.off('disconnect', orphaned);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
