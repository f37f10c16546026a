/**
 * The part of a service behind the API: its own MongoDB database and Temporal task queue on the
 * shared test stack, and a worker in this process. `startService` adds an in-process API on top;
 * tests that run the API as a child process (to SIGKILL it) use `startBackend` alone.
 */
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { loadConfig, type Config } from '../../config';
import { connectStore, type Store } from '../../store/db';
import { startWorker } from '../../worker/start-worker';
import { testStack } from './stack';

let counter = 0;

/**
 * Test configuration: a fresh database and task queue per call, `env` on top, on the shared
 * stack unless `servers` names others (tests that restart their own Temporal or FerretDB).
 */
export async function testConfig(
  env: Record<string, string> = {},
  servers?: { temporalAddress: string; mongoUri: string },
): Promise<Config> {
  const { temporalAddress, mongoUri } = servers ?? (await sharedServers());
  const id = `${process.pid}-${++counter}-${Date.now()}`;
  return loadConfig({
    API_PORT: '0',
    TEMPORAL_ADDRESS: temporalAddress,
    MONGODB_URI: mongoUri,
    MONGODB_DB: `wrs_test_${id.replace(/-/g, '_')}`,
    TEMPORAL_TASK_QUEUE: `wrs-test-${id}`,
    RETRY_INITIAL_MS: '50',
    LOG_LEVEL: 'silent',
    ...env,
  });
}

async function sharedServers(): Promise<{ temporalAddress: string; mongoUri: string }> {
  const { stack } = await testStack();
  return { temporalAddress: stack.temporal.address, mongoUri: stack.mongo.uri };
}

export interface InProcessWorker {
  /** Shuts the worker down (1 s grace for activities in flight) and closes its connection. */
  stop(): Promise<void>;
}

/** Runs a worker of `config`'s task queue in this process, with a prebuilt workflow bundle (the suite's by default). */
export async function startInProcessWorker(
  config: Config,
  store: Store,
  bundle?: WorkflowBundleWithSourceMap,
): Promise<InProcessWorker> {
  const workflowBundle = config.worker.workflowBundlePath
    ? undefined
    : (bundle ?? (await testStack()).bundle);
  return startWorker(config, store, { workflowBundle, shutdownGraceMs: 1_000 });
}

export interface TestBackend {
  config: Config;
  store: Store;
  worker: InProcessWorker;
  /** Stops the worker and closes the store. */
  close(): Promise<void>;
}

/** A database, a task queue and a worker in this process, without an API. */
export async function startBackend(
  opts: { env?: Record<string, string> } = {},
): Promise<TestBackend> {
  const config = await testConfig(opts.env);
  const store = await connectStore(config.mongo);
  const worker = await startInProcessWorker(config, store);
  return {
    config,
    store,
    worker,
    async close() {
      await worker.stop();
      await store.close();
    },
  };
}
