import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { defaultRegistryDir, isRunning, reapOrphans, registerChild, signalGroup } from './registry';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A server child process running in its own process group with output going to a log file. */
export interface ServerProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves once the child has exited (never rejects). Does not keep the event loop alive by itself. */
  readonly exited: Promise<ExitInfo>;
  isRunning(): boolean;
  /** SIGTERM to the group, SIGKILL after `graceMs`; idempotent. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL to the group (simulates a crash); idempotent. */
  kill(): Promise<void>;
  /** Last lines this run wrote to the log file. */
  logTail(maxLines?: number): string;
}

export interface SpawnServerOptions {
  name: string;
  command: string;
  args: string[];
  /** Output is appended here; the directory must exist. */
  logFile: string;
  /** Records the pid so a server orphaned by a SIGKILLed parent can be reaped by the next start. */
  pidFile?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Machine-wide registry of children and their owners (tools/stack/registry.ts); default ~/.cache/wrs/run. */
  registryDir?: string;
}

/** Makes `dir` (and missing parents) and keeps it the operator's only (0700), even if it existed. */
export function privateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
}

const running = new Set<{ pid: number; signal(sig: NodeJS.Signals): void }>();
let hooksInstalled = false;
const reapedDirs = new Set<string>();

/** Starts a server detached in its own process group, stdout/stderr appended to `logFile`. */
export function spawnServer(opts: SpawnServerOptions): ServerProcess {
  installExitHooks();
  const registryDir = opts.registryDir ?? defaultRegistryDir();
  // Servers whose parent was SIGKILLed (any clone, any tool) would hold ports and files for good: end them first.
  if (!reapedDirs.has(registryDir)) {
    reapedDirs.add(registryDir);
    reapOrphans(registryDir);
  }
  if (opts.pidFile) reapOrphan(opts.pidFile, opts.command);

  // Remember where this run's output starts so error messages show only this run's log lines.
  const logStart = fileSize(opts.logFile);
  // A server's log may hold what its users sent it: the operator's only (0600), even if an older
  // version of this code created it readable by all.
  fs.appendFileSync(
    opts.logFile,
    `\n=== ${new Date().toISOString()} start: ${opts.command} ${opts.args.join(' ')}\n`,
    { mode: 0o600 },
  );
  fs.chmodSync(opts.logFile, 0o600);
  const fd = fs.openSync(opts.logFile, 'a');
  let child;
  try {
    child = spawn(opts.command, opts.args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      // The child writes straight into the file: nothing is buffered in our memory and nothing lands on our tty.
      stdio: ['ignore', fd, fd],
      // Own process group: the whole group can be signalled, and a terminal Ctrl-C does not hit it directly.
      detached: true,
    });
  } finally {
    fs.closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) {
    // spawn failures (ENOENT, EACCES) surface asynchronously via 'error'; pid is undefined in that case.
    throw new Error(`failed to start ${opts.name}: ${opts.command} could not be executed`);
  }
  // Don't let a running server keep the parent's event loop alive; the exit hook cleans up instead.
  child.unref();

  let alive = true;
  const entry = {
    pid,
    signal(sig: NodeJS.Signals) {
      signalGroup(pid, sig);
    },
  };
  running.add(entry);
  const unregister = registerChild(pid, `${opts.name}: ${opts.command}`, registryDir);
  if (opts.pidFile) fs.writeFileSync(opts.pidFile, `${pid}\n`);

  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => {
      alive = false;
      running.delete(entry);
      unregister();
      if (opts.pidFile) removePidFile(opts.pidFile, pid);
      resolve({ code, signal });
    });
  });
  child.on('error', () => {
    /* reported through 'exit' */
  });

  let stopping: Promise<void> | null = null;

  const stop = (graceMs = 10_000): Promise<void> => {
    if (!alive) return exited.then(() => undefined);
    if (stopping) return stopping;
    stopping = (async () => {
      // Re-ref so the event loop stays alive until the exit is observed (the child is unref'd while running).
      child.ref();
      signalGroup(pid, 'SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const gone = await Promise.race([
        exited.then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), graceMs);
        }),
      ]);
      clearTimeout(timer);
      if (!gone) {
        signalGroup(pid, 'SIGKILL');
        await exited;
      }
    })();
    return stopping;
  };

  const kill = async (): Promise<void> => {
    if (alive) {
      child.ref(); // see stop()
      signalGroup(pid, 'SIGKILL');
    }
    await exited;
  };

  return {
    name: opts.name,
    pid,
    logFile: opts.logFile,
    exited,
    isRunning: () => alive,
    stop,
    kill,
    logTail: (maxLines = 40) => readLogTail(opts.logFile, maxLines, logStart),
  };
}

/** Resolves once something accepts TCP connections on host:port; rejects after timeoutMs. */
export async function waitForTcp(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await tryConnect(host, port)) return;
    if (Date.now() > deadline)
      throw new Error(`nothing listening on ${host}:${port} after ${timeoutMs} ms`);
    await sleep(100);
  }
}

/**
 * Retries `probe` until it succeeds. Rejects (with the log tail) as soon as the child exits, or after timeoutMs,
 * in which case the child is killed so a half-started server is not left behind.
 */
export async function waitUntilReady(
  proc: ServerProcess,
  probe: () => Promise<void>,
  opts: { timeoutMs: number; intervalMs?: number },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  const died = proc.exited.then((info) => info);
  let lastError: unknown;
  for (;;) {
    const attempt = probe().then(
      () => 'ready' as const,
      (err: unknown) => {
        lastError = err;
        return 'retry' as const;
      },
    );
    const outcome = await Promise.race([attempt, died]);
    if (outcome === 'ready') return;
    if (outcome !== 'retry') {
      const how = outcome.signal ? `signal ${outcome.signal}` : `exit code ${outcome.code}`;
      throw new Error(
        `${proc.name} exited (${how}) before it was ready; log ${proc.logFile}:\n${proc.logTail()}`,
      );
    }
    if (Date.now() > deadline) {
      await proc.kill();
      throw new Error(
        `${proc.name} not ready after ${opts.timeoutMs} ms (last error: ${errorMessage(lastError)}); log ${proc.logFile}:\n${proc.logTail()}`,
      );
    }
    await Promise.race([sleep(opts.intervalMs ?? 200), died]);
  }
}

/** Last `maxLines` lines of a log file, optionally only what was written after byte offset `from`. */
export function readLogTail(file: string, maxLines = 40, from = 0): string {
  try {
    const size = fileSize(file);
    const start = Math.max(from, size - 64 * 1024);
    const buf = Buffer.alloc(size - start);
    const fd = fs.openSync(file, 'r');
    try {
      fs.readSync(fd, buf, 0, buf.length, start);
    } finally {
      fs.closeSync(fd);
    }
    return buf.toString('utf8').trimEnd().split('\n').slice(-maxLines).join('\n');
  } catch {
    return '(log unavailable)';
  }
}

/** True when a process with this pid exists (signal 0 probes without sending anything). */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  // 'exit' handlers must be synchronous: SIGKILL is the only thing that is guaranteed to finish in time.
  process.on('exit', () => {
    for (const entry of running) entry.signal('SIGKILL');
  });
  // Detached children don't get the terminal's Ctrl-C, and a default signal death skips 'exit'. If nobody else
  // handles the signal, ask the servers to shut down (they finish on their own) and re-raise the default action.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = (): void => {
      if (process.listenerCount(sig) > 1) return; // the application handles it and is expected to call stop()
      for (const entry of running) entry.signal('SIGTERM');
      process.removeListener(sig, handler);
      process.kill(process.pid, sig);
    };
    process.on(sig, handler);
  }
}

/** Kills a server left running by a previous parent that died without cleanup (e.g. SIGKILL). */
function reapOrphan(pidFile: string, command: string): void {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1 || !isPidAlive(pid)) return;
  // Only kill it if it is really our server binary (pids get reused); /proc is Linux-only, skip elsewhere.
  let cmdline: string;
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return;
  }
  if (!cmdline.startsWith(`${command}\0`) && !cmdline.startsWith(`${path.basename(command)}\0`))
    return;
  signalGroup(pid, 'SIGKILL');
  const deadline = Date.now() + 5000;
  // Busy-wait is acceptable here: it is rare, short, and keeps spawnServer synchronous.
  while (isRunning(pid) && Date.now() < deadline)
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
}

function removePidFile(pidFile: string, pid: number): void {
  try {
    if (fs.readFileSync(pidFile, 'utf8').trim() === String(pid)) fs.unlinkSync(pidFile);
  } catch {
    /* already gone */
  }
}

function tryConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
