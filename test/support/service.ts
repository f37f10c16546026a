/**
 * A complete service on the test stack: its own MongoDB database and Temporal task queue (so
 * tests never see each other's data or workers), the API on a free port, and a worker that a
 * test may start late or stop to observe `pending`.
 */
import { NativeConnection, type Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { DestinationStream } from 'pino';
import { loadConfig, type Config } from '../../config';
import { startApi, type ApiHandle } from '../../api/start-api';
import { createLogger } from '../../api/logger';
import { connectStore, type Store } from '../../store/db';
import { createRunWorker } from '../../worker/create-worker';
import { testStack } from './stack';

export interface TestService {
  url: string;
  config: Config;
  store: Store;
  api: ApiHandle;
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

/** Where a service runs: the shared test stack by default, or servers a test started itself (restart tests). */
export interface ServiceStack {
  temporalAddress: string;
  mongoUri: string;
  bundle: WorkflowBundleWithSourceMap;
}

let counter = 0;

/** Starts API (and, unless `worker: false`, a worker) on the shared stack (or `stack`); env overrides go through loadConfig. */
export async function startService(
  opts: {
    worker?: boolean;
    env?: Record<string, string>;
    /** Where the API's log lines go, at the env's LOG_LEVEL (default: nowhere). */
    logDestination?: DestinationStream;
    /** Servers of the test's own instead of the shared stack (which is then not started for it). */
    stack?: ServiceStack;
  } = {},
): Promise<TestService> {
  const { temporalAddress, mongoUri, bundle } = opts.stack ?? (await sharedStack());
  const id = `${process.pid}-${++counter}-${Date.now()}`;
  const config = loadConfig({
    API_PORT: '0',
    TEMPORAL_ADDRESS: temporalAddress,
    MONGODB_URI: mongoUri,
    MONGODB_DB: `wrs_test_${id.replace(/-/g, '_')}`,
    TEMPORAL_TASK_QUEUE: `wrs-test-${id}`,
    RETRY_INITIAL_MS: '50',
    LOG_LEVEL: 'silent',
    ...opts.env,
  });
  const store = await connectStore(config.mongo);
  const logger = opts.logDestination ? createLogger(config.logLevel, 'wrs-api', opts.logDestination) : createLogger('silent');
  const api = await startApi(config, logger);
  let worker: { worker: Worker; running: Promise<void>; connection: NativeConnection } | undefined;

  const service: TestService = {
    url: api.url,
    config,
    store,
    api,
    async startWorker() {
      if (worker) return;
      const connection = await NativeConnection.connect({ address: config.temporal.address });
      const w = await createRunWorker({
        connection,
        namespace: config.temporal.namespace,
        taskQueue: config.temporal.taskQueue,
        collections: store.collections,
        db: store.db,
        // The API listens on a free port: signed file links (D19) made by the worker must point at it.
        config: config.api.publicBaseUrl ? config : { ...config, api: { ...config.api, publicBaseUrl: api.url } },
        workflowBundle: bundle,
        shutdownGraceTimeMs: 1_000,
      });
      worker = { worker: w, running: w.run(), connection };
    },
    async stopWorker() {
      if (!worker) return;
      const { worker: w, running, connection } = worker;
      worker = undefined;
      w.shutdown();
      await running;
      await connection.close();
    },
    async close() {
      await service.stopWorker();
      await api.close();
      await store.close();
    },
  };
  if (opts.worker !== false) await service.startWorker();
  return service;
}

/** The shared stack (started on first use) as a ServiceStack. */
async function sharedStack(): Promise<ServiceStack> {
  const { stack, bundle } = await testStack();
  return { temporalAddress: stack.temporal.address, mongoUri: stack.mongo.uri, bundle };
}
