/** Memory and CPU of the processes under test, read from /proc (Linux). */
import { readFileSync } from 'node:fs';

const CLK_TCK = 100; // USER_HZ: 100 on every Linux we run on

/** Resident set size in MB (VmRSS), or NaN if the process is gone. */
export function rssMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1]);
    return kb / 1024;
  } catch {
    return NaN;
  }
}

/** CPU seconds (user + system) the process has used so far. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** Busy CPU seconds of the whole machine so far (all cores, /proc/stat). */
export function machineBusySeconds(): number {
  try {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
    // user nice system idle iowait irq softirq steal: everything but idle and iowait is busy.
    const [user, nice, system, , , irq, softirq, steal] = fields.map(Number);
    return (user + nice + system + irq + softirq + (steal || 0)) / CLK_TCK;
  } catch {
    return NaN;
  }
}

export interface PhaseUsage {
  /**
   * CPU cores used on average over the phase (1.0 = one core busy), per process of ours, plus
   * `machine` (everything) and `other` (machine minus ours: other tenants of this machine).
   */
  cores: Record<string, number>;
  /** Per process: peak RSS in MB seen by the sampler during the phase. */
  peakRssMb: Record<string, number>;
  /** Per process: RSS at the end of the phase. */
  endRssMb: Record<string, number>;
  seconds: number;
}

/** Samples RSS of named processes every `everyMs`; `phase()` brackets a measured section. */
export class ProcessMonitor {
  private readonly peaks = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pids: Record<string, number>,
    everyMs = 200,
  ) {
    this.timer = setInterval(() => this.sample(), everyMs);
    this.timer.unref();
  }

  private sample(): void {
    for (const [name, pid] of Object.entries(this.pids)) {
      const rss = rssMb(pid);
      if (!Number.isNaN(rss)) this.peaks.set(name, Math.max(this.peaks.get(name) ?? 0, rss));
    }
  }

  /** Starts a phase; the returned function ends it and reports CPU and memory over it. */
  begin(): () => PhaseUsage {
    this.peaks.clear();
    this.sample();
    const t0 = Date.now();
    const cpu0 = Object.fromEntries(
      Object.entries(this.pids).map(([n, pid]) => [n, cpuSeconds(pid)]),
    );
    const machine0 = machineBusySeconds();
    return () => {
      this.sample();
      const seconds = (Date.now() - t0) / 1000;
      const cores: Record<string, number> = {};
      const peakRssMb: Record<string, number> = {};
      const endRssMb: Record<string, number> = {};
      for (const [name, pid] of Object.entries(this.pids)) {
        cores[name] = (cpuSeconds(pid) - cpu0[name]) / seconds;
        peakRssMb[name] = this.peaks.get(name) ?? NaN;
        endRssMb[name] = rssMb(pid);
      }
      cores.machine = (machineBusySeconds() - machine0) / seconds;
      cores.other = Math.max(
        0,
        cores.machine - Object.keys(this.pids).reduce((sum, n) => sum + (cores[n] || 0), 0),
      );
      return { cores, peakRssMb, endRssMb, seconds };
    };
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
