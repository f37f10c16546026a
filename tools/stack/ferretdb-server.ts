import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { MongoClient } from 'mongodb';
import { ensureFerretDb } from './binaries';
import { goServerEnv } from './go-runtime';
import { watchIdLookups } from './ferretdb-id-index';
import { freePort, retryPortRace } from './ports';
import { privateDir, spawnServer, waitForTcp, waitUntilReady } from './process';

export interface StartFerretDbOptions {
  /** Holds the SQLite databases (data/), state.json, ferretdb.log and ferretdb.pid; reuse it to keep the data. */
  dataDir: string;
  /** MongoDB wire-protocol port; a free one when omitted. */
  port?: number;
  /** FerretDB binary; built/cached via ensureFerretDb() when omitted. */
  binary?: string;
  /** Readiness timeout, default 30 s. */
  readyTimeoutMs?: number;
}

/**
 * The most connections a client of ours opens to FerretDB. FerretDB 1.24's SQLite backend keeps
 * at most 100 SQLite connections per database, and an `update` (or `findAndModify`) holds one for
 * its query while it takes a second for the write: 100 concurrent updates of one database take
 * all 100 and then wait for each other forever (every command on that database hangs). The API and
 * the worker each got the driver's default pool of 100, so a burst of finalize writes under load
 * froze the store (the 1,000-run load test, once in a few full-suite runs). With 16 per client, an
 * API, a worker and a tool together stay far below it. On MongoDB the driver's default stands.
 */
export const FERRETDB_MAX_POOL_SIZE = 16;

export interface FerretDbServer {
  /** `mongodb://127.0.0.1:port/?maxPoolSize=16` (FERRETDB_MAX_POOL_SIZE) */
  uri: string;
  dataDir: string;
  pid: number;
  logFile: string;
  /** Graceful stop (SIGTERM, SIGKILL after 10 s); idempotent. */
  stop(): Promise<void>;
  /** SIGKILL, for crash tests; idempotent. */
  kill(): Promise<void>;
}

/** Builds the `ferretdb` argument list (exported so callers/tests can see the exact command). */
export function ferretDbArgs(o: { dataDir: string; port: number }): string[] {
  // Directory URI with trailing slash (FerretDB requires it); pathToFileURL percent-encodes odd characters.
  // FerretDB already defaults to WAL; synchronous(normal) is the usual WAL pairing and avoids an fsync per commit.
  const sqliteUrl = `${pathToFileURL(path.join(o.dataDir, 'data')).href}/?_pragma=synchronous(normal)`;
  return [
    '--handler=sqlite',
    `--sqlite-url=${sqliteUrl}`,
    `--listen-addr=127.0.0.1:${o.port}`,
    `--state-dir=${o.dataDir}`,
    // The debug/metrics HTTP listener defaults to 127.0.0.1:8088, which would collide between instances.
    '--debug-addr=-',
    // Never report telemetry (and point the reporter at a dead local port in case it ever tried).
    '--telemetry=disable',
    '--test-telemetry-url=http://127.0.0.1:9/',
    '--log-level=WARN',
    '--log-format=text',
  ];
}

/** Starts FerretDB (SQLite handler) on 127.0.0.1 and resolves once a MongoDB ping succeeds. */
export async function startFerretDb(opts: StartFerretDbOptions): Promise<FerretDbServer> {
  return retryPortRace(() => startFerretDbOnce(opts), opts.port !== undefined);
}

async function startFerretDbOnce(opts: StartFerretDbOptions): Promise<FerretDbServer> {
  const binary = opts.binary ?? (await ensureFerretDb());
  const dataDir = path.resolve(opts.dataDir);
  // FerretDB refuses to start unless the SQLite directory already exists. The database holds
  // key hashes and the development secrets (lib/codec/keys.ts): the operator's only.
  privateDir(dataDir);
  privateDir(path.join(dataDir, 'data'));
  const port = opts.port ?? (await freePort());

  const proc = spawnServer({
    name: 'ferretdb',
    command: binary,
    args: ferretDbArgs({ dataDir, port }),
    logFile: path.join(dataDir, 'ferretdb.log'),
    pidFile: path.join(dataDir, 'ferretdb.pid'),
    cwd: dataDir,
    env: goServerEnv({ DO_NOT_TRACK: '1' }),
  });
  const uri = `mongodb://127.0.0.1:${port}/?maxPoolSize=${FERRETDB_MAX_POOL_SIZE}`;

  await waitUntilReady(
    proc,
    async () => {
      await waitForTcp('127.0.0.1', port, 0);
      const client = new MongoClient(uri, {
        directConnection: true,
        serverSelectionTimeoutMS: 2000,
        connectTimeoutMS: 2000,
      });
      try {
        await client.connect();
        await client.db('admin').command({ ping: 1 });
      } finally {
        await client.close();
      }
    },
    { timeoutMs: opts.readyTimeoutMs ?? 30_000, intervalMs: 100 },
  );

  // Reads by `_id` use an index only with this (tools/stack/ferretdb-id-index.ts).
  const unwatch = watchIdLookups(dataDir);
  return {
    uri,
    dataDir,
    pid: proc.pid,
    logFile: proc.logFile,
    stop: () => (unwatch(), proc.stop()),
    kill: () => (unwatch(), proc.kill()),
  };
}
