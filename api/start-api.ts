/** Wires the API's dependencies from configuration: MongoDB, the app and its server, then Temporal. */
import type { Connection } from '@temporalio/client';
import type { Config } from '../config';
import { connectStoreWhenReachable, type Store } from '../store/db';
import { payloadProtection } from '../lib/codec/data-converter';
import { startTracing } from '../lib/observability/tracing';
import { createApp } from './app';
import { createLogger, type Logger } from './logger';
import { RunGateway, connectTemporal, ensureSearchAttributes } from './temporal/run-gateway';
import { isTemporalUnavailable } from './temporal/grpc-errors';
import { retrying } from '../lib/retrying';
import { setTimeout as sleep } from 'node:timers/promises';
import { oneSettleAtATime, settleRun } from './runs/settle-run';
import { CreditCheck } from './limits/credit-check';
import { listen, type CloseStats, type RunningServer } from './server';
import { Drain } from './drain';
import { createPollSource } from './stream/poll-source';
import { settleIfNeverStarted } from './runs/settle-never-started';
import { PollerRegistry } from './stream/run-poller';

export interface ApiHandle extends RunningServer {
  gateway: RunGateway;
  /**
   * The API's Temporal connection, for tooling only (tests build their own client on it, the bench
   * counts its calls); the API itself goes through `gateway`. Throws until `temporal` has resolved.
   */
  readonly connection: Connection;
  /**
   * Resolves once Temporal answered and is set up for the API (search attributes, the D29
   * retention schedule); until then calls that need it answer 503 as in an outage. Rejects when
   * that set-up fails for another reason than an unreachable Temporal (the process should end, as
   * a failed start), or when the API shuts down first (then once a connection try under way settles).
   */
  temporal: Promise<void>;
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

/** startApi's options. */
export interface StartApiOptions {
  /** The driver emits command events on `store.client` (tests and the bench count store round trips). */
  monitorCommands?: boolean;
}

/** listenApi, resolved only once Temporal is set up too (`npm start`, tests, the bench); `close()` undoes it all. */
export async function startApi(
  config: Config,
  logger: Logger = createLogger(config.logLevel, 'wrs-api'),
  opts: StartApiOptions = {},
): Promise<ApiHandle> {
  const api = await listenApi(config, logger, opts);
  try {
    await api.temporal;
  } catch (err) {
    await api.close().catch(() => undefined);
    throw err;
  }
  return api;
}

/**
 * Connects MongoDB and listens, then connects Temporal (api.temporal). The process answers its
 * probes (/healthz; /readyz by MongoDB alone) while Temporal is still unreachable: a replica that
 * starts during a Temporal outage stays up and serves what MongoDB serves, as one that was running
 * when the outage began, instead of being restarted by its orchestrator's startup probe again and
 * again (docs/deploy.md "Health checks"). `close()` undoes it all, a wait for Temporal included.
 */
export async function listenApi(
  config: Config,
  logger: Logger = createLogger(config.logLevel, 'wrs-api'),
  opts: StartApiOptions = {},
): Promise<ApiHandle> {
  // Settings that have no effect (an OPENAI_API_KEY without OPENAI_BASE_URL): said once, at start.
  for (const warning of config.warnings) logger.warn(warning);
  const stopTracing = startTracing(config.tracing, 'wrs-api');
  const store = await connectStoreWhenReachable(
    { ...config.mongo, appName: 'wrs-api', monitorCommands: opts.monitorCommands },
    (err) => logger.warn(failure(err), 'MongoDB unreachable at start; waiting for it'),
  );
  // Without a connection until setUpTemporal attaches one: its calls fail as in an outage (503).
  const gateway: RunGateway = new RunGateway({
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

  let connection: Connection | undefined;
  const stopConnecting = new AbortController();
  const temporal = setUpTemporal(config, logger, gateway, stopConnecting.signal, (c) => {
    connection = c;
  });
  temporal.catch(() => undefined); // the caller's to handle; a shutdown awaits it too
  return {
    ...running,
    gateway,
    get connection(): Connection {
      if (!connection) throw new Error('Temporal has not answered yet (await api.temporal)');
      return connection;
    },
    temporal,
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
    // A wait for Temporal ends here (not awaited: a connection try under way may take its 10 s
    // connect timeout to settle, then closes what it got); a set-up step in flight fails.
    stopConnecting.abort();
    await connection?.close();
    await store.close();
    await stopTracing();
    return { ...stats, streams };
  }
}

/**
 * Connects the API to Temporal, waiting while it is unreachable, and sets it up; each step that
 * finds it unavailable (gone again, or its namespace not registered yet on a fresh install) is
 * tried again. `connected` is told the connection as soon as there is one (the shutdown closes it).
 */
async function setUpTemporal(
  config: Config,
  logger: Logger,
  gateway: RunGateway,
  signal: AbortSignal,
  connected: (connection: Connection) => void,
): Promise<void> {
  const waiting = (err: unknown) => {
    if (!signal.aborted) logger.warn(failure(err), 'Temporal unreachable at start; waiting for it');
  };
  const whileUnavailable = <T>(step: () => Promise<T>) =>
    retrying(
      () =>
        step().catch((err: unknown) => {
          if (isTemporalUnavailable(err)) waiting(err);
          throw err;
        }),
      {
        forMs: Infinity,
        retryable: isTemporalUnavailable,
        pause: (ms) => sleep(ms, undefined, { signal }),
      },
    );
  const connection = await connectTemporal(config.temporal, waiting, signal);
  if (signal.aborted) {
    // A try under way when the shutdown began (it is not cut short): nobody closes it but us.
    await connection.close();
    signal.throwIfAborted();
  }
  connected(connection);
  await whileUnavailable(() => ensureSearchAttributes(connection, config.temporal.namespace));
  gateway.attach(connection); // starts are served from here on
  await whileUnavailable(() => gateway.ensureRetentionSchedule()); // D29
}
