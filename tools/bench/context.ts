/** What every benchmark gets from the orchestrator, and what it hands back for the report. */
import type { Client } from '@temporalio/client';
import type { Store } from '../../store/db';
import type { FakeLlm } from './fake-llm';
import type { ServerChild } from './lib/children';
import type { PhaseUsage, ProcessMonitor } from './lib/proc';
import type { Summary } from './lib/stats';

export interface Sizes {
  /**
   * `drainMs`: at most this long for a phase's runs to finish before the next phase. `rounds`:
   * bare/service pairs at c=32, whose median ratio is the verdict (one pair swings ±10%).
   */
  p1: {
    concurrencies: number[];
    durationMs: number;
    warmupMs: number;
    drainMs: number;
    rounds: number;
  };
  p2: { iterations: number; warmup: number; pollMs: number };
  /** The fake holds every run's llm call through a `steadyMs` steady state, then answers them over `releaseSpreadMs`. */
  p3: { runs: number; clientsPerRun: number; steadyMs: number; releaseSpreadMs: number };
  /** P9: a batch of `rows` with one row in `failEvery` refused once, then its re-run of failed items (D38). */
  p9: { rows: number; failEvery: number; concurrency: number; fakeMs: number; timeoutMs: number };
  /** Batch sizes and the per-run concurrency each runs at (the workflow's own `concurrency`). */
  p4: { cases: Array<{ rows: number; concurrency: number }>; fakeMs: number; timeoutMs: number };
  /** P4b: rows of a JSON Lines file through batch → llm → llm (answers of `answerBytes`), pipelined (D35). */
  p4b: {
    rows: number;
    concurrency: number;
    fakeMs: number;
    promptBytes: number;
    answerBytes: number;
    timeoutMs: number;
  };
  /** P4c: a million short file rows through one llm node (out of the default run: `--only p4c`). */
  p4c: { rows: number; concurrency: number; fakeMs: number; timeoutMs: number };
  /** `filler`: older finished runs added for the second half of P5. */
  p5: { concurrency: number; durationMs: number; warmupMs: number; runs: number; filler: number };
  /** P8: rows of each of the four accounts' batches, their concurrency, and the idle demo runs measured. */
  p8: { rows: number; concurrency: number; fakeMs: number; idleProbes: number; timeoutMs: number };
}

export const FULL: Sizes = {
  p9: { rows: 100_000, failEvery: 100, concurrency: 64, fakeMs: 50, timeoutMs: 900_000 },
  p1: { concurrencies: [1, 8, 32], durationMs: 8_000, warmupMs: 1_000, drainMs: 90_000, rounds: 3 },
  p2: { iterations: 100, warmup: 5, pollMs: 50 },
  p3: { runs: 100, clientsPerRun: 10, steadyMs: 10_000, releaseSpreadMs: 2_000 },
  p4: {
    cases: [{ rows: 1_000, concurrency: 8 }],
    fakeMs: 50,
    timeoutMs: 400_000,
  },
  p4b: {
    rows: 100_000,
    concurrency: 64,
    fakeMs: 50,
    promptBytes: 200,
    answerBytes: 2_000,
    timeoutMs: 900_000,
  },
  p4c: { rows: 1_000_000, concurrency: 64, fakeMs: 50, timeoutMs: 3_600_000 },
  p5: { concurrency: 50, durationMs: 8_000, warmupMs: 1_000, runs: 100, filler: 10_000 },
  p8: { rows: 100_000, concurrency: 64, fakeMs: 50, idleProbes: 30, timeoutMs: 1_800_000 },
};

export const QUICK: Sizes = {
  p9: { rows: 2_000, failEvery: 100, concurrency: 64, fakeMs: 50, timeoutMs: 120_000 },
  p1: { concurrencies: [1, 8, 32], durationMs: 2_000, warmupMs: 500, drainMs: 30_000, rounds: 1 },
  p2: { iterations: 20, warmup: 3, pollMs: 50 },
  p3: { runs: 10, clientsPerRun: 10, steadyMs: 4_000, releaseSpreadMs: 500 },
  p4: {
    cases: [{ rows: 100, concurrency: 8 }],
    fakeMs: 50,
    timeoutMs: 60_000,
  },
  p4b: {
    rows: 2_000,
    concurrency: 64,
    fakeMs: 50,
    promptBytes: 200,
    answerBytes: 2_000,
    timeoutMs: 120_000,
  },
  p4c: { rows: 5_000, concurrency: 64, fakeMs: 50, timeoutMs: 120_000 },
  p5: { concurrency: 50, durationMs: 2_000, warmupMs: 500, runs: 20, filler: 500 },
  p8: { rows: 5_000, concurrency: 64, fakeMs: 50, idleProbes: 10, timeoutMs: 300_000 },
};

export interface RpcStat {
  calls: number;
  totalMs: number;
  errors: number;
}

/** The API child's side endpoint (tools/bench/server.ts). */
export interface ApiStats {
  rpc: Record<string, RpcStat>;
  /** MongoDB operations by `collection.method`. */
  mongo: Record<string, RpcStat>;
  /** Store round trips by `<command> <collection>` (driver command monitoring). */
  commands: Record<string, number>;
  pollers: number;
  subscribers: number;
  liveQueries: number;
  rssMb: number;
  heapUsedMb: number;
}

export interface Idle {
  /** Workflows running when the wait began, and when it ended (0 unless it gave up). */
  initial: number;
  running: number;
  waitedMs: number;
}

export interface DebitTally {
  runs: number;
  missing: number;
  wrong: number;
}

export interface BenchContext {
  quick: boolean;
  sizes: Sizes;
  api: ServerChild;
  worker: ServerChild;
  apiUrl: string;
  /** P1's bare HTTP start in the baseline child (tools/bench/baseline/http-start.ts). */
  bareHttpUrl: string;
  key: string;
  accountId: string;
  /** The load process's own Temporal client (baseline starts, waiting for results, describe). */
  temporal: Client;
  /** The load process's own MongoDB connection (setup, P5 baseline). */
  store: Store;
  fake: FakeLlm;
  monitor: ProcessMonitor;
  log(message: string): void;
  apiStats(): Promise<ApiStats>;
  /** The same counters from the worker child (MongoDB only). */
  workerStats(): Promise<ApiStats>;
  /** Waits until no workflow is running (the backlog of a phase must not bleed into the next). */
  waitIdle(maxMs?: number): Promise<Idle>;
  /**
   * Waits for idle, then deletes finished run records, so every benchmark starts from a small
   * runs collection (FerretDB scans it on most run queries: P5 measures that on its own).
   */
  resetRuns(maxMs?: number): Promise<Idle>;
  /** Debits checked against the finalized runs `resetRuns` deleted (tools/bench/consistency.ts). */
  debitTally: DebitTally;
}

export interface Row {
  case: string;
  n?: number;
  p50?: number;
  p95?: number;
  p99?: number;
  /** Operations per second. */
  throughput?: number;
  /** Measured value / baseline value (throughput for P1, p50 for P2, p99 lag for P3, p99 for P5, wall time for P4). */
  ratio?: number;
  errors?: number;
  usage?: PhaseUsage;
  note?: string;
}

/** A table row from a latency summary (`extra` adds a ratio, a usage or a note). */
export function summaryRow(label: string, s: Summary, extra: Partial<Row> = {}): Row {
  return {
    case: label,
    n: s.count,
    p50: s.p50,
    p95: s.p95,
    p99: s.p99,
    throughput: s.throughput,
    errors: s.errors,
    ...extra,
  };
}

export interface Verdict {
  target: string;
  measured: string;
  met: boolean | null;
}

export interface BenchResult {
  id: string;
  title: string;
  /** What the baseline is and why it was chosen. */
  baseline: string;
  /** Unit of p50/p95/p99 in the table. */
  unit: string;
  rows: Row[];
  verdicts: Verdict[];
  /** Further markdown lines (evidence, counts, errors). */
  details: string[];
}

/** Diff of two RPC (or, with `which = 'mongo'`, MongoDB) counter snapshots. */
export function rpcDelta(
  after: ApiStats,
  before: ApiStats,
  which: 'rpc' | 'mongo' = 'rpc',
): Record<string, RpcStat> {
  const out: Record<string, RpcStat> = {};
  for (const [name, stat] of Object.entries(after[which])) {
    const prev = before[which][name] ?? { calls: 0, totalMs: 0, errors: 0 };
    const calls = stat.calls - prev.calls;
    if (calls > 0)
      out[name] = {
        calls,
        totalMs: stat.totalMs - prev.totalMs,
        errors: stat.errors - prev.errors,
      };
  }
  return out;
}

export function describeRpc(delta: Record<string, RpcStat>): string {
  const parts = Object.entries(delta)
    .sort((a, b) => b[1].calls - a[1].calls)
    .map(
      ([name, s]) =>
        `${name} ×${s.calls} (avg ${(s.totalMs / s.calls).toFixed(1)} ms${s.errors ? `, ${s.errors} errors` : ''})`,
    );
  return parts.length ? parts.join(', ') : 'none';
}
