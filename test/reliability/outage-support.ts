/** Shared pieces of the server-restart tests (temporal-restart, ferretdb-restart). */
import assert from 'node:assert/strict';
import type { Counter } from 'prom-client';
import type { Collections } from '../../store/db';
import { call, waitFor, type ApiResponse } from '../support/http';

/** The start fee and gpt-test's price the restart tests configure; the fake reports 100 prompt and 50 completion tokens a call. */
const START_FEE_USD = 0.001;
const CALL_USD = (100 * 1 + 50 * 2) / 1e6;

/** The cost of one run of llmWorkflow: the start fee and one call. */
export function expectedRunUsd(): number {
  return START_FEE_USD + CALL_USD;
}

/** The topic of run `i`: a slow provider call that names its run, so every answer is traceable. */
export function topicOf(i: number, delayMs: number): string {
  return `slow:${delayMs} run-${i}`;
}

/** Runs `fn` and measures it in milliseconds. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: Math.round(performance.now() - started), value };
}

/** Asserts the error envelope (`{error: {message, type, code}}`) with the given status and code. */
export function assertEnvelope(res: ApiResponse, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(typeof res.body?.error?.message, 'string', JSON.stringify(res.body));
  assert.equal(res.body.error.type, 'server_error');
  assert.equal(res.body.error.code, code);
}

/** Waits until every run is terminal (through the API) and asserts each completed; returns the records in order. */
export async function completedRuns(url: string, key: string, runIds: string[], timeoutMs: number): Promise<any[]> {
  const runs = await waitFor(
    async () => {
      const all = await Promise.all(runIds.map((id) => call(url, 'GET', `/api/v1/runs/${id}`, { key })));
      return all.every((r) => r.status === 200 && ['completed', 'failed', 'cancelled'].includes(r.body.status)) ? all.map((r) => r.body) : undefined;
    },
    { timeoutMs, intervalMs: 250, what: `${runIds.length} runs to end` },
  );
  for (const run of runs) assert.equal(run.status, 'completed', JSON.stringify(run));
  return runs;
}

/** The process-wide count of runs ended with `status` (each counted by the finalize attempt that wrote the record). */
export async function endedCount(counter: Counter<'status'>, status: string): Promise<number> {
  const { values } = await counter.get();
  return values.find((v) => v.labels.status === status)?.value ?? 0;
}

/**
 * Waits until the account's `count` runs have their final record; returns the milliseconds waited.
 * (A run reads `completed` as soon as its workflow finished; the record and the debit are written
 * by the finalize activity right after, so the money is checked only after this.)
 */
export async function allFinalized(collections: Collections, accountId: string, count: number, timeoutMs: number): Promise<number> {
  const started = Date.now();
  await waitFor(async () => ((await collections.runs.countDocuments({ account_id: accountId, finalized: true })) === count ? true : undefined), {
    timeoutMs,
    intervalMs: 100,
    what: `${count} runs finalized`,
  });
  return Date.now() - started;
}
