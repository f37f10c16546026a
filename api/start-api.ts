/** Wires the API's dependencies from configuration: MongoDB, Temporal, the app and its server. */
import type { Connection } from '@temporalio/client';
import type { Config } from '../config';
import { connectStoreWhenReachable, type Store } from '../store/db';
import { payloadProtection } from '../lib/codec/data-converter';
import { startTracing } from '../lib/observability/tracing';
import { createApp } from './app';
import { createLogger, type Logger } from './logger';
import { RunGateway, connectTemporal, ensureSearchAttributes } from './temporal/run-gateway';
import { oneSettleAtATime, settleRun } from './runs/settle-run';
import { CreditCheck } from './limits/credit-check';
import { listen, type CloseStats, type RunningServer } from './server';
import { Drain } from './drain';
import { createPollSource } from './stream/poll-source';
import { settleIfNeverStarted } from './runs/settle-never-started';
import { PollerRegistry } from './stream/run-poller';

export interface ApiHandle extends RunningServer {
  gateway: RunGateway;
  /** The API's Temporal connection, for tooling only (tests build their own client on it, the bench counts its calls); the API itself goes through `gateway`. */
  connection: Connection;
  pollers: PollerRegistry;
  /** The API's own MongoDB client and collections (tests watch its driver's view of the server). */
  store: Store;
  /**
   * The SIGTERM drain (docs/deploy.md "Draining"): readiness fails and `Prefer: wait` answers at
   * once; after `delayMs` the listener closes, open streams end with a reconnect comment, requests
   * in flight get `graceMs`; then every connection is closed. `close()` is this with no delay.
   */
  shutdown(opts: { delayMs: number; graceMs: number }): Promise<ShutdownStats>;
}

export interface ShutdownStats extends CloseStats {
  /** Stream clients attached when the listener closed (each ended with the reconnect comment). */
  streams: number;
}

/** A failure that is waited out, for the log. */
function failure(err: unknown): { error: string } {
  return { error: String((err as Error)?.message ?? err) };
}

/** Connects everything and listens; `close()` undoes it all. */
export async function startApi(
  config: Config,
  logger: Logger = createLogger(config.logLevel, 'wrs-api'),
  /** monitorCommands: the driver emits command events on `store.client` (tests and the bench count store round trips). */
  opts: { monitorCommands?: boolean } = {},
): Promise<ApiHandle> {
  const stopTracing = startTracing(config.tracing, 'wrs-api');
  const store = await connectStoreWhenReachable(
    { ...config.mongo, appName: 'wrs-api', monitorCommands: opts.monitorCommands },
    (err) => logger.warn(failure(err), 'MongoDB unreachable at start; waiting for it'),
  );
  const connection = await connectTemporal(config.temporal, (err) =>
    logger.warn(failure(err), 'Temporal unreachable at start; waiting for it'),
  );
  await ensureSearchAttributes(connection, config.temporal.namespace);
  const gateway: RunGateway = new RunGateway({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    queryTimeoutMs: config.api.queryTimeoutMs,
    rpcTimeoutMs: config.temporal.rpcTimeoutMs,
    onClosedUnfinished: oneSettleAtATime((runId, status) =>
      settleRun(store.collections, gateway, runId, status, config.runs.webhookRetryInitialMs),
    ),
    payloads: payloadProtection(config, store.db),
    traced: config.tracing.otlpEndpoint !== undefined,
  });
  await gateway.ensureRetentionSchedule(); // D29
  const pollers = new PollerRegistry(
    createPollSource(gateway, store.collections, (runId) =>
      settleIfNeverStarted(store.collections, runId),
    ),
    config.api.stream.pollMs,
  );
  const credits = new CreditCheck(store.collections, undefined, (err, { accountId, usd }) =>
    logger.warn(
      { ...failure(err), account_id: accountId, usd },
      'credit release not booked (MongoDB unreachable); trying again in the background',
    ),
  );
  const drain = new Drain();
  const app = createApp({
    config,
    db: store.db,
    collections: store.collections,
    gateway,
    pollers,
    logger,
    credits,
    drain,
  });
  const running = await listen(app, config);
  return {
    ...running,
    gateway,
    connection,
    pollers,
    store,
    shutdown,
    close: (graceMs?: number) => shutdown({ delayMs: 0, graceMs: graceMs ?? 5_000 }),
  };

  async function shutdown(opts: { delayMs: number; graceMs: number }): Promise<ShutdownStats> {
    drain.begin();
    // Still serving, but out of rotation: the load balancer's health checks see /readyz fail.
    if (opts.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, opts.delayMs));
    const closing = running.close(opts.graceMs);
    // Open streams end now, without [DONE]: their clients reconnect elsewhere (resume looks count too).
    const streams = pollers.stopAll();
    const stats = await closing;
    await credits.close(); // D17: this process's unused lease goes back to the account
    await connection.close();
    await store.close();
    await stopTracing();
    return { ...stats, streams };
  }
}
