/** Starts tools/bench/server.ts in a child process (the server under test) and waits for its ready line. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

export interface ServerChild {
  role: string;
  pid: number;
  url?: string;
  /** The baseline child's bare HTTP start (tools/bench/baseline/http-start.ts). */
  bareHttpUrl?: string;
  statsUrl?: string;
  logFile: string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the child has exited. */
  stop(graceMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export async function startServerChild(opts: {
  role: 'api' | 'worker' | 'baseline' | 'all';
  env: Record<string, string>;
  logDir: string;
  /** Write a V8 CPU profile here on exit (`--cpu-prof`). */
  cpuProfDir?: string;
  /** `--max-old-space-size` of the child, in MB. */
  maxOldSpaceMb?: number;
  timeoutMs?: number;
}): Promise<ServerChild> {
  const logFile = path.join(opts.logDir, `server-${opts.role}.log`);
  const log = fs.createWriteStream(logFile, { flags: 'a' });
  const nodeArgs = ['--require', require.resolve('tsx/cjs')];
  if (opts.maxOldSpaceMb) nodeArgs.push(`--max-old-space-size=${opts.maxOldSpaceMb}`);
  if (opts.cpuProfDir) {
    // One directory per role and Node's default names (which carry the thread id): a worker's
    // workflow threads write profiles of their own, which a fixed name would overwrite.
    const dir = path.join(opts.cpuProfDir, opts.role);
    fs.mkdirSync(dir, { recursive: true });
    nodeArgs.push('--cpu-prof', '--cpu-prof-dir', dir);
  }
  const child = spawn(process.execPath, [...nodeArgs, path.join(__dirname, '..', 'server.ts')], {
    env: { ...process.env, ...opts.env, BENCH_ROLE: opts.role },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => live.delete(child));
  child.stderr!.pipe(log);

  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new Error(
            `${opts.role} server not ready after ${opts.timeoutMs ?? 180_000} ms; see ${logFile}`,
          ),
        ),
      opts.timeoutMs ?? 180_000,
    );
    const lines = readline.createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      log.write(`${line}\n`);
      try {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        if (parsed.role === opts.role && parsed.pid === child.pid) {
          clearTimeout(timer);
          resolve(parsed);
        }
      } catch {
        // a log line
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(
          `${opts.role} server exited (${code ?? signal}) before it was ready:\n${tail(logFile)}`,
        ),
      );
    });
  });

  return {
    role: opts.role,
    pid: child.pid!,
    url: ready.url as string | undefined,
    bareHttpUrl: ready.bareHttpUrl as string | undefined,
    statsUrl: ready.statsUrl as string | undefined,
    logFile,
    stop: async (graceMs = 15_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      log.end();
    },
  };
}

function tail(file: string, lines = 30): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
