/**
 * A machine-wide registry of the server and worker processes our tools start, so none outlives a
 * crash of its parent for long: each child gets a file `~/.cache/wrs/run/<pid>.json` naming it and
 * its owner (the process that started it), both identified by pid *and* start time, so a reused
 * pid is never mistaken for either. `reapOrphans()` kills every registered process whose owner is
 * gone; `npm start`, the tests and the benchmarks call it before they start servers, from any clone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

interface Registration {
  pid: number;
  /** Start time of `pid` (Linux /proc clock ticks); null where /proc is missing. */
  start: string | null;
  owner: number;
  ownerStart: string | null;
  command: string;
}

/** The shared registry directory, `~/.cache/wrs/run`. */
export function defaultRegistryDir(): string {
  return path.join(os.homedir(), '.cache', 'wrs', 'run');
}

/** Records `pid` as started by this process; returns a function that removes the record again. */
export function registerChild(
  pid: number,
  command: string,
  dir = defaultRegistryDir(),
): () => void {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${pid}.json`);
  const entry: Registration = {
    pid,
    start: startTime(pid),
    owner: process.pid,
    ownerStart: startTime(process.pid),
    command,
  };
  fs.writeFileSync(file, JSON.stringify(entry));
  return () => fs.rmSync(file, { force: true });
}

/**
 * Kills (SIGKILL, its whole process group) every registered process whose owner has died and
 * removes stale records. Returns what it killed, for a log line.
 */
export function reapOrphans(dir = defaultRegistryDir()): Array<{ pid: number; command: string }> {
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  const killed: Array<{ pid: number; command: string }> = [];
  for (const name of names) {
    const file = path.join(dir, name);
    let entry: Registration;
    try {
      entry = JSON.parse(fs.readFileSync(file, 'utf8')) as Registration;
    } catch {
      continue; // being written right now, or not ours
    }
    if (isSameProcess(entry.owner, entry.ownerStart)) continue; // its owner still looks after it
    if (isSameProcess(entry.pid, entry.start)) {
      signalGroup(entry.pid, 'SIGKILL');
      killed.push({ pid: entry.pid, command: entry.command });
    }
    fs.rmSync(file, { force: true });
  }
  // SIGKILL is delivered asynchronously: wait (briefly, synchronously, as it is rare) until each is
  // gone, so the caller finds the ports and files free. A finished zombie holds neither.
  const deadline = Date.now() + 15_000;
  for (const { pid } of killed) {
    while (isRunning(pid) && Date.now() < deadline)
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
  return killed;
}

/** True when `pid` runs: exists and is not a finished zombie (a killed orphan stays one until PID 1 reaps it). */
export function isRunning(pid: number): boolean {
  return isSameProcess(pid, startTime(pid));
}

/** True when `pid` runs and (where start times are known) is the process that was registered. */
function isSameProcess(pid: number, start: string | null): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (start === null) return true;
  const now = startTime(pid);
  return now === start && !(isZombie(pid) && threadCount(pid) <= 1);
}

/**
 * Threads of a process. A multi-threaded process (a Go server) shows its leader as a zombie while
 * its other threads still tear down and still hold its sockets: it is gone only when they are.
 */
function threadCount(pid: number): number {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}

/** Field 22 of /proc/<pid>/stat: when the process started, fixed for its life (survives exec). */
function startTime(pid: number): string | null {
  const stat = readStat(pid);
  return stat ? (stat[19] ?? null) : null;
}

/** A killed orphan stays a zombie until PID 1 reaps it (slow in some containers); it holds no ports or files. */
function isZombie(pid: number): boolean {
  return readStat(pid)?.[0] === 'Z';
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces), from the state on. */
function readStat(pid: number): string[] | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** Signals a process group (servers run in their own), or the process alone when it leads none. */
export function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig); // not a group leader (a worker), or the group is gone
    } catch {
      /* already exited */
    }
  }
}
