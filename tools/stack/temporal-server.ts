import path from 'node:path';
import { Connection } from '@temporalio/client';
import { ensureTemporal } from './binaries';
import { goServerEnv } from './go-runtime';
import { freePort, retryPortRace } from './ports';
import { privateDir, spawnServer, waitForTcp, waitUntilReady } from './process';

export type SearchAttributeType =
  'Keyword' | 'Int' | 'Text' | 'Bool' | 'Double' | 'Datetime' | 'KeywordList';

export interface StartTemporalOptions {
  /** Holds temporal.db (SQLite), temporal.log and temporal.pid; reuse it (and the port) to restart on the same state. */
  dataDir: string;
  /** gRPC frontend port; a free one when omitted. */
  port?: number;
  /** Web UI port; a free one when omitted (ignored when headless). */
  uiPort?: number;
  /** No Web UI (tests). */
  headless?: boolean;
  /** Namespace to create and wait for; "default" always exists. */
  namespace?: string;
  /** Custom search attributes registered at start. */
  searchAttributes?: Record<string, SearchAttributeType>;
  /** Temporal CLI binary; built/cached via ensureTemporal() when omitted. */
  binary?: string;
  /** Readiness timeout, default 60 s. */
  readyTimeoutMs?: number;
}

export interface TemporalServer {
  /** gRPC address, `127.0.0.1:port`. */
  address: string;
  uiUrl: string | null;
  namespace: string;
  dataDir: string;
  pid: number;
  logFile: string;
  /** Graceful stop (SIGTERM, SIGKILL after 10 s); idempotent. */
  stop(): Promise<void>;
  /** SIGKILL, for crash tests; idempotent. */
  kill(): Promise<void>;
}

/** Builds the `temporal server start-dev` argument list (exported so callers/tests can see the exact command). */
export function temporalArgs(o: {
  dataDir: string;
  port: number;
  uiPort: number | null;
  namespace: string;
  searchAttributes: Record<string, SearchAttributeType>;
}): string[] {
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(o.port),
    '--db-filename',
    path.join(o.dataDir, 'temporal.db'),
    // WAL + synchronous=normal: survives process crashes, far fewer fsyncs than the default.
    '--sqlite-pragma',
    'journal_mode=wal',
    '--sqlite-pragma',
    'synchronous=normal',
    // The server otherwise phones home to check for new versions.
    '--dynamic-config-value',
    'frontend.enableServerVersionCheck=false',
    // Queue processors acknowledge every second instead of every 30 s, so a deleted or closed
    // execution disappears in seconds (tests of "Temporal forgot the run" wait on it).
    '--dynamic-config-value',
    'history.transferProcessorUpdateAckInterval="1s"',
    '--dynamic-config-value',
    'history.visibilityProcessorUpdateAckInterval="1s"',
    // Eager activity dispatch: a workflow task completion hands its new activities straight to the
    // worker that completed it (the SDK asks for it), skipping the matching service: a batch row's
    // schedule-to-start went from ~36 ms to ~0 (tools/bench/FINDINGS.md P4).
    '--dynamic-config-value',
    'system.enableActivityEagerExecution=true',
    '--log-level',
    'warn',
    '--log-format',
    'text',
    // Keep a user's ~/.config/temporalio env/profile out of the server process.
    '--disable-config-file',
    '--disable-config-env',
  ];
  // HTTP API, metrics and internal service ports default to random free ports bound to --ip (127.0.0.1).
  if (o.uiPort === null) args.push('--headless');
  else args.push('--ui-ip', '127.0.0.1', '--ui-port', String(o.uiPort));
  // No `--ui-codec-endpoint` (D32): the UI hands its codec endpoint to anyone who asks
  // (`GET /api/v1/settings`, unauthenticated) and the argv is readable by every local user, so an
  // endpoint holding the codec token would leak it. The operator sets the endpoint in the UI's
  // "Codec Server browser endpoint" instead, kept in their browser only (docs/deploy.md).
  if (o.namespace !== 'default') args.push('--namespace', o.namespace); // "default" is always created
  for (const [name, type] of Object.entries(o.searchAttributes))
    args.push('--search-attribute', `${name}=${type}`);
  return args;
}

/** Starts a Temporal dev server on 127.0.0.1 with SQLite persistence and resolves once it answers gRPC calls. */
export async function startTemporal(opts: StartTemporalOptions): Promise<TemporalServer> {
  // The dev server also binds several random ports of its own, so a race is possible too.
  return retryPortRace(() => startTemporalOnce(opts), opts.port !== undefined);
}

async function startTemporalOnce(opts: StartTemporalOptions): Promise<TemporalServer> {
  const binary = opts.binary ?? (await ensureTemporal());
  const dataDir = path.resolve(opts.dataDir);
  privateDir(dataDir); // the SQLite history and the log are the operator's only
  const namespace = opts.namespace ?? 'default';
  const port = opts.port ?? (await freePort());
  const uiPort = opts.headless ? null : (opts.uiPort ?? (await freePort()));
  const args = temporalArgs({
    dataDir,
    port,
    uiPort,
    namespace,
    searchAttributes: opts.searchAttributes ?? {},
  });

  const proc = spawnServer({
    name: 'temporal',
    command: binary,
    args,
    logFile: path.join(dataDir, 'temporal.log'),
    pidFile: path.join(dataDir, 'temporal.pid'),
    cwd: dataDir,
    env: goServerEnv(),
  });
  const address = `127.0.0.1:${port}`;

  await waitUntilReady(
    proc,
    async () => {
      // Cheap TCP check first so we don't build gRPC channels against a closed port.
      await waitForTcp('127.0.0.1', port, 0);
      // A fresh connection per attempt avoids grpc-js reconnect back-off delaying readiness.
      const connection = await Connection.connect({ address, connectTimeout: '2s' });
      try {
        await connection.withDeadline(Date.now() + 2000, () =>
          connection.workflowService.describeNamespace({ namespace }),
        );
      } finally {
        await connection.close();
      }
    },
    { timeoutMs: opts.readyTimeoutMs ?? 60_000 },
  );

  return {
    address,
    uiUrl: uiPort === null ? null : `http://127.0.0.1:${uiPort}`,
    namespace,
    dataDir,
    pid: proc.pid,
    logFile: proc.logFile,
    stop: () => proc.stop(),
    kill: () => proc.kill(),
  };
}
