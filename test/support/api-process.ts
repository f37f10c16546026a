/**
 * The production API entry (`api/main.ts`) as a child process, for tests that must kill the API
 * the hard way (SIGKILL) with streams open. It runs in one node process (no `tsx` launcher in
 * between), so the signal reaches the API itself, and it can be started again on the same port
 * so clients reconnect to the address they know, as they would behind a load balancer.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Config } from '../../config';

export interface ApiProcess {
  child: ChildProcess;
  /** The base URL the API listens on. */
  url: string;
  port: number;
  /** What the API wrote to stderr and stdout (its JSON log lines), for failure messages. */
  output(): string;
  /** SIGKILL, resolved once the process is gone. */
  kill(): Promise<void>;
}

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * Starts an API on `config`'s database and task queue and resolves once it serves starts (it has
 * connected to Temporal: `/readyz` is 200), or with `until: 'listening'` once it listens (which
 * it does before Temporal answers). `port` (default: a free one) lets a restart take the port of
 * a killed process; `env` adds variables.
 */
export async function startApiProcess(
  config: Config,
  opts: {
    port?: number;
    env?: Record<string, string>;
    readyTimeoutMs?: number;
    until?: 'listening' | 'ready';
  } = {},
): Promise<ApiProcess> {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'api/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      API_HOST: '127.0.0.1',
      API_PORT: String(opts.port ?? 0),
      TEMPORAL_ADDRESS: config.temporal.address,
      TEMPORAL_NAMESPACE: config.temporal.namespace,
      TEMPORAL_TASK_QUEUE: config.temporal.taskQueue,
      MONGODB_URI: config.mongo.uri,
      MONGODB_DB: config.mongo.dbName,
      STREAM_POLL_MS: String(config.api.stream.pollMs),
      STREAM_KEEPALIVE_MS: String(config.api.stream.keepaliveMs),
      RATE_LIMIT_STARTS_PER_MINUTE: String(config.api.rateLimits.startsPerMinute),
      RATE_LIMIT_REQUESTS_PER_MINUTE: String(config.api.rateLimits.requestsPerMinute),
      START_FEE_USD: String(config.runs.startFeeUsd),
      RETRY_INITIAL_MS: String(config.runs.retryInitialMs),
      // `info` is the level of the "API listening" line this function waits for; requests log at debug.
      LOG_LEVEL: 'info',
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  // Both pipes are drained for the process's whole life: a full pipe would block the API's writes.
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        fail(
          new Error(
            `the API did not listen within ${opts.readyTimeoutMs ?? 30_000} ms:\n${output}`,
          ),
        ),
      opts.readyTimeoutMs ?? 30_000,
    );
    let lines = '';
    let listening: string | undefined;
    const onData = (chunk: Buffer) => {
      lines += chunk.toString('utf8');
      for (const line of lines.split('\n')) {
        if (!line.includes('"API listening"')) continue;
        try {
          const parsed = JSON.parse(line) as { url?: string };
          if (parsed.url) listening = parsed.url;
        } catch {
          // a partial line: the rest comes with the next chunk
        }
      }
      if (listening && (opts.until === 'listening' || lines.includes('"Temporal connected"')))
        return done(listening);
    };
    const onExit = () =>
      fail(
        new Error(
          `the API exited before it listened (code ${child.exitCode}, signal ${child.signalCode}):\n${output}`,
        ),
      );
    function done(value: string) {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
      resolve(value);
    }
    function fail(err: Error) {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
      void kill().then(() => reject(err));
    }
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });
  return { child, url, port: Number(new URL(url).port), output: () => output, kill };
}
