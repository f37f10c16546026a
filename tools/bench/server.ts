/**
 * The server under test, run as a child of the benchmark so load generation never shares its
 * event loop. Configured by environment (config/index.ts) plus:
 *   BENCH_ROLE=api     the API (startApi);
 *   BENCH_ROLE=worker    the run worker, alone, as a worker process of the service runs;
 *   BENCH_ROLE=baseline  the baseline's bare worker (bench/baseline, own task queue), in a process
 *                        of its own so the run worker's memory and CPU are the service's alone;
 *   BENCH_ROLE=all       all of them in one process.
 * Each has a side HTTP endpoint `GET /stats` on another loopback port: every MongoDB operation
 * (by collection and method, with time spent), and for the API every Temporal RPC it made (by
 * method), its live pollers and memory. The counters wrap the driver's prototypes in this
 * process only; product code is untouched.
 * Prints one JSON line on stdout when ready ({role, pid, url?, bareHttpUrl?, statsUrl}); SIGTERM/SIGINT stop
 * it cleanly (process.exit, so `--cpu-prof` writes its profile).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { NativeConnection, Worker } from '@temporalio/worker';
import { Collection, type MongoClient } from 'mongodb';
import { storeCommand } from '../../store/round-trips';
import { loadConfig, type Config } from '../../config';
import { startApi, type ApiHandle } from '../../api/start-api';
import { createLogger } from '../../api/logger';
import { connectStore } from '../../store/db';
import { startWorker } from '../../worker/start-worker';
import { payloadProtection } from '../../lib/codec/data-converter';
import { installWorkerRuntime, tuneWorkerHeap } from '../../worker/runtime';
import { BARE_TASK_QUEUE } from './baseline/constants';
import { startBareHttpStart } from './baseline/http-start';

interface RpcStat {
  calls: number;
  totalMs: number;
  errors: number;
}

const mongoStats: Record<string, RpcStat> = {};
/** Store round trips by `<command> <collection>`, from the driver's command monitoring (bench P6). */
const commandCounts: Record<string, number> = {};

/** Counts every command `client` sends (made with `monitorCommands: true`). */
function countCommands(client: MongoClient): void {
  client.on('commandStarted', (event) => {
    const command = storeCommand(event);
    if (command)
      commandCounts[`${command.name} ${command.collection}`] =
        (commandCounts[`${command.name} ${command.collection}`] ?? 0) + 1;
  });
}

/** Times every MongoDB operation the service makes, keyed `collection.method`. */
function instrumentMongo(): void {
  const proto = Collection.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  // Promise-returning operations (findOne goes through find, so find itself is not counted), and
  // aggregate, timed through its cursor's toArray. insertMany goes through bulkWrite, so the
  // group commits (store/run-writes.ts) show as bulkWrite: run inserts in the API, debits and
  // final records in the worker.
  for (const method of [
    'findOne',
    'insertOne',
    'bulkWrite',
    'updateOne',
    'updateMany',
    'findOneAndUpdate',
    'deleteOne',
    'countDocuments',
    'aggregate',
  ]) {
    const original = proto[method];
    if (typeof original !== 'function') continue;
    proto[method] = function (this: Collection, ...args: unknown[]) {
      const key = `${this.collectionName}.${method}`;
      const stat = (mongoStats[key] ??= { calls: 0, totalMs: 0, errors: 0 });
      stat.calls++;
      const t0 = performance.now();
      const result = original.apply(this, args);
      if (method === 'aggregate') {
        const cursor = result as { toArray: () => Promise<unknown> };
        const toArray = cursor.toArray.bind(cursor);
        cursor.toArray = () => {
          const a0 = performance.now();
          return toArray().finally(() => (stat.totalMs += performance.now() - a0));
        };
        return cursor;
      }
      if (!(result instanceof Promise)) return result;
      return result.then(
        (value) => {
          stat.totalMs += performance.now() - t0;
          return value;
        },
        (err: unknown) => {
          stat.totalMs += performance.now() - t0;
          stat.errors++;
          throw err;
        },
      );
    };
  }
}

/** Wraps every method of the API's WorkflowService so the benchmark can count Temporal calls exactly. */
function instrumentRpc(api: ApiHandle): Record<string, RpcStat> {
  const stats: Record<string, RpcStat> = {};
  const service = api.connection.workflowService as unknown as Record<string, unknown>;
  for (const [name, impl] of Object.entries(service)) {
    if (typeof impl !== 'function') continue;
    const method = impl as (...args: unknown[]) => Promise<unknown>;
    service[name] = async (...args: unknown[]) => {
      const stat = (stats[name] ??= { calls: 0, totalMs: 0, errors: 0 });
      stat.calls++;
      const t0 = performance.now();
      try {
        return await method(...args);
      } catch (err) {
        stat.errors++;
        throw err;
      } finally {
        stat.totalMs += performance.now() - t0;
      }
    };
  }
  return stats;
}

async function startStatsServer(
  api: ApiHandle | undefined,
  rpc: Record<string, RpcStat>,
): Promise<string> {
  const server = http.createServer((req, res) => {
    if (req.url !== '/stats') {
      res.writeHead(404).end();
      return;
    }
    const mem = process.memoryUsage();
    res.writeHead(200, { 'content-type': 'application/json' });
    if (!api) {
      res.end(
        JSON.stringify({
          rpc,
          mongo: mongoStats,
          commands: commandCounts,
          pollers: 0,
          subscribers: 0,
          liveQueries: 0,
          rssMb: mem.rss / 2 ** 20,
          heapUsedMb: mem.heapUsed / 2 ** 20,
        }),
      );
      return;
    }
    // PollerRegistry keeps its map private; the live pollers' own counters are a cross-check of `rpc`.
    const registry = api.pollers as unknown as {
      pollers?: Map<string, { queries: number; subscriberCount: number }>;
    };
    let liveQueries = 0;
    let subscribers = 0;
    for (const poller of registry.pollers?.values() ?? []) {
      liveQueries += poller.queries;
      subscribers += poller.subscriberCount;
    }
    res.end(
      JSON.stringify({
        rpc,
        mongo: mongoStats,
        commands: commandCounts,
        pollers: api.pollers.size,
        subscribers,
        liveQueries,
        rssMb: mem.rss / 2 ** 20,
        heapUsedMb: mem.heapUsed / 2 ** 20,
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function startRunWorker(config: Config): Promise<() => Promise<void>> {
  tuneWorkerHeap(config.worker.heapGrowingPercent); // as worker/main.ts does
  installWorkerRuntime(config.logLevel);
  const store = await connectStore({
    uri: config.mongo.uri,
    dbName: config.mongo.dbName,
    appName: 'wrs-bench-worker',
    monitorCommands: true,
  });
  countCommands(store.client);
  const runWorker = await startWorker(config, store, { shutdownGraceMs: 2_000 });
  return async () => {
    // The runtime also shuts workers down on SIGINT/SIGTERM by itself.
    await runWorker.stop();
    await store.close();
  };
}

/**
 * The baseline's bare worker (P1, P2): the same server and codec, none of the service's code; and
 * P1's bare HTTP start (baseline/http-start.ts), whose URL it returns.
 */
async function startBaseline(config: Config): Promise<{ url: string; stop: () => Promise<void> }> {
  installWorkerRuntime(config.logLevel);
  const store = await connectStore({
    uri: config.mongo.uri,
    dbName: config.mongo.dbName,
    appName: 'wrs-bench-baseline',
  });
  // The bench's client seals every payload as the service does (D32), so the baseline pays the same codec.
  const { dataConverter } = payloadProtection(config, store.db);
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const bareWorker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: BARE_TASK_QUEUE,
    workflowsPath: require.resolve('./baseline/workflows'),
    dataConverter,
  });
  const bareRunning = bareWorker.run();
  const httpStart = await startBareHttpStart({
    address: config.temporal.address,
    namespace: config.temporal.namespace,
    dataConverter,
  });
  return {
    url: httpStart.url,
    stop: async () => {
      await httpStart.close();
      if (bareWorker.getState() === 'RUNNING') bareWorker.shutdown();
      await bareRunning;
      await connection.close();
      await store.close();
    },
  };
}

async function main(): Promise<void> {
  const role = process.env.BENCH_ROLE ?? 'all';
  const config = loadConfig(process.env);
  const stops: Array<() => Promise<void>> = [];
  const ready: Record<string, unknown> = { role, pid: process.pid };
  instrumentMongo();
  if (role === 'worker' || role === 'all') stops.push(await startRunWorker(config));
  if (role === 'baseline' || role === 'all') {
    const bare = await startBaseline(config);
    stops.push(bare.stop);
    ready.bareHttpUrl = bare.url;
  }
  let api: ApiHandle | undefined;
  let rpc: Record<string, RpcStat> = {};
  if (role === 'api' || role === 'all') {
    api = await startApi(config, createLogger(config.logLevel, 'wrs-api'), {
      monitorCommands: true,
    });
    countCommands(api.store.client);
    rpc = instrumentRpc(api);
    ready.url = api.url;
    stops.push(async () => void (await api!.close()));
  }
  ready.statsUrl = await startStatsServer(api, rpc);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    const timer = setTimeout(() => process.exit(0), 10_000);
    await Promise.allSettled(stops.map((s) => s()));
    clearTimeout(timer);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  process.stdout.write(`${JSON.stringify(ready)}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
