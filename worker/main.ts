/** Worker entry: `npm run worker`. Executes runs until SIGINT/SIGTERM, then drains. */
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../config';
import { connectFirst } from '../config/temporal-connection';
import { connectStore } from '../store/db';
import { createRunWorker } from './create-worker';
import { payloadProtection } from '../lib/codec/data-converter';
import { installWorkerRuntime } from './runtime';
import { serveMetrics } from './metrics-server';

async function main(): Promise<void> {
  // Started by `npm start` (an IPC channel to it): when that parent dies, even by SIGKILL, the channel
  // closes; exit (draining, once the worker runs) rather than run on as an orphan.
  let running = false;
  const orphaned = () => (running ? process.kill(process.pid, 'SIGTERM') : process.exit(0));
  if (process.send) process.once('disconnect', orphaned);
  const config = loadConfig(process.env);
  installWorkerRuntime(config.logLevel, config.worker.sdkMetricsPort);
  const store = await connectStore({ ...config.mongo, appName: 'wrs-worker' });
  const connection = await connectFirst(config.temporal, (options) => NativeConnection.connect(options));
  const worker = await createRunWorker({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    collections: store.collections,
    db: store.db,
    config,
    shutdownGraceTimeMs: config.worker.shutdownGraceMs,
    workflowBundlePath: config.worker.workflowBundlePath,
    payloads: payloadProtection(config, store.db),
  });
  const metrics = config.worker.metricsPort ? await serveMetrics(config.worker.metricsPort) : undefined;
  // Worker.run installs its own SIGINT/SIGTERM handling and resolves after draining.
  const done = worker.run();
  running = true;
  await done;
  metrics?.close();
  await connection.close();
  await store.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
