/** Wires the API's dependencies from configuration: MongoDB, Temporal, the app and its server. */
import { Connection } from '@temporalio/client';
import type { Config } from '../config';
import { connectStore } from '../store/db';
import { createApp } from './app';
import { createLogger, type Logger } from './logger';
import { RunGateway, ensureSearchAttributes } from './run-gateway';
import { ensureRetentionSchedule } from './retention-schedule';
import { listen, type RunningServer } from './server';
import { createPollSource } from './stream/poll-source';
import { PollerRegistry } from './stream/run-poller';

export interface ApiHandle extends RunningServer {
  gateway: RunGateway;
  pollers: PollerRegistry;
}

/** Connects everything and listens; `close()` undoes it all. */
export async function startApi(config: Config, logger: Logger = createLogger(config.logLevel, 'wrs-api')): Promise<ApiHandle> {
  const store = await connectStore({ uri: config.mongo.uri, dbName: config.mongo.dbName, appName: 'wrs-api' });
  const connection = await Connection.connect({ address: config.temporal.address });
  await ensureSearchAttributes(connection, config.temporal.namespace);
  const gateway = new RunGateway({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    queryTimeoutMs: config.api.queryTimeoutMs,
  });
  await ensureRetentionSchedule(gateway.client, config.temporal.taskQueue); // D29
  const pollers = new PollerRegistry(createPollSource(gateway, store.collections), config.api.stream.pollMs);
  const app = createApp({ config, db: store.db, collections: store.collections, gateway, pollers, logger });
  const running = await listen(app, config);
  return {
    ...running,
    gateway,
    pollers,
    close: async (graceMs?: number) => {
      const closing = running.close(graceMs);
      pollers.stopAll(); // open streams end now, without [DONE]: their clients reconnect elsewhere
      await closing;
      await connection.close();
      await store.close();
    },
  };
}
