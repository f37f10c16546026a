/**
 * A complete service on the test stack: its own MongoDB database and Temporal task queue (so
 * tests never see each other's data or workers), the API on a free port, and a worker that a
 * test may start late or stop to observe `pending`.
 */
import { Client } from '@temporalio/client';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { payloadProtection } from '../../lib/codec/data-converter';
import type { DestinationStream } from 'pino';
import type { Config } from '../../config';
import { startApi, type ApiHandle } from '../../api/start-api';
import { createLogger } from '../../api/logger';
import { serverFaults } from './server-faults';
import { connectStore, type Store } from '../../store/db';
import { startInProcessWorker, testConfig, type InProcessWorker } from './backend';
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

export interface ServiceOptions {
  worker?: boolean;
  env?: Record<string, string>;
  /** Where the API's log lines go, at the env's LOG_LEVEL (default: its error lines, to test/support/server-faults.ts). */
  logDestination?: DestinationStream;
  /** Servers of the test's own instead of the shared stack (which is then not started for it). */
  stack?: ServiceStack;
  /** The API's MongoDB client emits command events (test/support/round-trips.ts counts them). */
  monitorCommands?: boolean;
}

/** Starts API (and, unless `worker: false`, a worker) on the shared stack (or `stack`); env overrides go through loadConfig. */
export async function startService(opts: ServiceOptions = {}): Promise<TestService> {
  const { temporalAddress, mongoUri, bundle } = opts.stack ?? (await sharedStack());
  const config = await testConfig(opts.env, { temporalAddress, mongoUri });
  const store = await connectStore(config.mongo);
  const logger = opts.logDestination
    ? createLogger(config.logLevel, 'wrs-api', opts.logDestination)
    : createLogger('error', 'wrs-api', serverFaults);
  const api = await startApi(config, logger, { monitorCommands: opts.monitorCommands });
  let worker: InProcessWorker | undefined;

  const service: TestService = {
    url: api.url,
    config,
    store,
    api,
    async startWorker() {
      if (worker) return;
      // The API listens on a free port: signed file links (D19) made by the worker must point at it.
      const workerConfig = config.api.publicBaseUrl
        ? config
        : { ...config, api: { ...config.api, publicBaseUrl: api.url } };
      worker = await startInProcessWorker(workerConfig, store, bundle);
    },
    async stopWorker() {
      if (!worker) return;
      const stopping = worker;
      worker = undefined;
      await stopping.stop();
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

/**
 * Another API process of `svc`'s deployment (its database and task queue), as behind a load
 * balancer; without a worker of its own unless `worker: true`.
 */
export function startPeerService(
  svc: TestService,
  opts: ServiceOptions = {},
): Promise<TestService> {
  const env = {
    MONGODB_DB: svc.config.mongo.dbName,
    TEMPORAL_TASK_QUEUE: svc.config.temporal.taskQueue,
    ...opts.env,
  };
  return startService({ worker: false, ...opts, env });
}

/** The shared stack (started on first use) as a ServiceStack. */
async function sharedStack(): Promise<ServiceStack> {
  const { stack, bundle } = await testStack();
  return { temporalAddress: stack.temporal.address, mongoUri: stack.mongo.uri, bundle };
}

/**
 * A Temporal client on the service's own connection, with its payload codec (D32), for tests that
 * look at workflows directly (histories, results, schedules). The API itself reaches Temporal only
 * through its RunGateway.
 */
export function temporalClient(svc: TestService): Client {
  let client = clients.get(svc);
  if (!client) {
    const { dataConverter } = payloadProtection(svc.config, svc.store.db);
    client = new Client({
      connection: svc.api.connection,
      namespace: svc.config.temporal.namespace,
      dataConverter,
    });
    clients.set(svc, client);
  }
  return client;
}
const clients = new WeakMap<TestService, Client>();
