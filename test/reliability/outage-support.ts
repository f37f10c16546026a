/** Shared pieces of the server-restart tests (temporal-restart, ferretdb-restart). */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Counter } from 'prom-client';
import type { Collections } from '../../store/db';
import { runsEnded } from '../../lib/metrics';
import { startStack, type FerretDbServer, type TemporalServer } from '../../tools/stack';
import { installWorkerRuntime } from '../../worker/runtime';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/definitions';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import { newAccount } from '../support/accounts';
import { llmWorkflow, publish } from '../support/fixtures';
import { call, waitFor, type ApiResponse } from '../support/http';
import { startService, type TestService } from '../support/service';
import { suiteBundle } from '../support/suite-bundle';
import type { SseClient } from '../support/sse';

/** A test's own stack (its servers are the ones it stops), the fake provider and a service on them. */
export interface PrivateStack {
  /** Set to undefined while a test has the server down, and to the restarted one after. */
  temporal: TemporalServer | undefined;
  mongo: FerretDbServer | undefined;
  fake: FakeOpenAI;
  svc: TestService;
  /** Streams a test opened: aborted after the block. */
  streams: SseClient[];
}

/**
 * Mocha hooks of the restart tests: a private Temporal and FerretDB (the shared stack serves the
 * other test files), the fake provider and a service with `env` on them, and all of it gone after.
 */
export function usePrivateStack(name: string, env: Record<string, string>): PrivateStack {
  const ctx = { streams: [] as SseClient[] } as PrivateStack;
  let dataDir: string | undefined;
  before(async () => {
    installWorkerRuntime('error'); // the worker's reconnect errors are expected here
    dataDir = mkdtempSync(path.join(os.tmpdir(), `wrs-${name}-`));
    const [stack, bundle] = await Promise.all([
      startStack({ dataDir, headless: true, searchAttributes: SEARCH_ATTRIBUTE_TYPES }),
      suiteBundle(),
    ]);
    ({ temporal: ctx.temporal, mongo: ctx.mongo } = stack);
    ctx.fake = await startFakeOpenAI();
    ctx.svc = await startService({
      stack: { temporalAddress: stack.temporal.address, mongoUri: stack.mongo.uri, bundle },
      env: {
        OPENAI_BASE_URL: ctx.fake.baseUrl,
        PRICES: JSON.stringify({ 'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 } }),
        ...env,
      },
    });
  });
  after(async () => {
    for (const s of ctx.streams) s.abort();
    await ctx.svc?.close().catch(() => undefined);
    await ctx.fake?.close();
    await ctx.temporal?.kill();
    await ctx.mongo?.kill();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  return ctx;
}

/** `count` runs of llmWorkflow('ask') by a new account, each waiting `delayMs` on its provider call once this returns. */
export async function startRunsInFlight(stack: PrivateStack, count: number, delayMs: number) {
  const { svc, fake } = stack;
  const { accountId, key } = await newAccount(svc.store.collections, 10);
  await publish(svc.url, key, llmWorkflow('ask'));
  const endedBefore = await endedCount(runsEnded, 'completed');
  const callsBefore = fake.requests.length;
  const runIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await call(svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'ask', inputs: { topic: topicOf(i, delayMs) } },
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    runIds.push(res.body.run_id);
  }
  await waitFor(async () => (fake.requests.length - callsBefore >= count ? true : undefined), {
    timeoutMs: 20_000,
    what: `${count} provider calls`,
  });
  return { accountId, key, runIds, endedBefore, callsBefore, calledAt: Date.now() };
}

/**
 * After a restart at `upAt`: how long until a read, a start (its run joins `runIds`, topic
 * `topicOf(runIds.length, 10)`) and /readyz succeed again, asked every 100 ms.
 */
export async function awaitRecovery(
  url: string,
  key: string,
  runIds: string[],
  upAt: number,
): Promise<{ read: number; start: number; readyz: number }> {
  const recovery = { timeoutMs: 20_000, intervalMs: 100 };
  const read = await waitFor(
    async () =>
      (await call(url, 'GET', `/api/v1/runs/${runIds[2]}`, { key })).status === 200
        ? Date.now() - upAt
        : undefined,
    {
      ...recovery,
      what: 'reads to recover',
    },
  );
  const topic = topicOf(runIds.length, 10);
  let late: ApiResponse | undefined;
  const start = await waitFor(
    async () => {
      late = await call(url, 'POST', '/api/v1/responses', {
        key,
        body: { workflowId: 'ask', inputs: { topic } },
      });
      if (late.status === 202) return Date.now() - upAt;
      assertEnvelope(late, 503, 'service_unavailable');
      return undefined;
    },
    { ...recovery, what: 'starts to recover' },
  );
  runIds.push(late!.body.run_id);
  const readyz = await waitFor(
    async () =>
      (await call(url, 'GET', '/readyz')).status === 200 ? Date.now() - upAt : undefined,
    recovery,
  );
  return { read, start, readyz };
}

/** Exactly one debit per run, of its cost, and each final record written once; returns the debits. */
export async function assertOneDebitEach(
  collections: Collections,
  accountId: string,
  runIds: string[],
  endedBefore: number,
) {
  const debits = await collections.ledger.find({ account_id: accountId, kind: 'run' }).toArray();
  assert.deepEqual(debits.map((d) => d.run_id).sort(), [...runIds].sort(), 'one debit per run');
  for (const d of debits)
    assert.ok(
      Math.abs(d.amount_usd + expectedRunUsd()) < 1e-9,
      `debit ${d._id} is ${d.amount_usd}`,
    );
  assert.equal(
    (await endedCount(runsEnded, 'completed')) - endedBefore,
    runIds.length,
    'each final record written once',
  );
  return debits;
}

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
export async function completedRuns(
  url: string,
  key: string,
  runIds: string[],
  timeoutMs: number,
): Promise<any[]> {
  const runs = await waitFor(
    async () => {
      const all = await Promise.all(
        runIds.map((id) => call(url, 'GET', `/api/v1/runs/${id}`, { key })),
      );
      return all.every(
        (r) => r.status === 200 && ['completed', 'failed', 'cancelled'].includes(r.body.status),
      )
        ? all.map((r) => r.body)
        : undefined;
    },
    { timeoutMs, intervalMs: 250, what: `${runIds.length} runs to end` },
  );
  for (const run of runs) assert.equal(run.status, 'completed', JSON.stringify(run));
  return runs;
}

/**
 * Each run of startRunsInFlight (and the one started during recovery, `lastIndex`, a fast call)
 * answered its own topic and cost one start fee and one call: nothing was lost, repeated or mixed up.
 */
export function assertOwnAnswers(runs: any[], lastIndex: number, delayMs: number): void {
  for (const [i, run] of runs.entries()) {
    assert.equal(
      run.output.answer[0].parts[0].text,
      `echo: ${topicOf(i, i === lastIndex ? 10 : delayMs)}`,
      `${run.id} has its own answer`,
    );
    assert.ok(
      Math.abs(run.total_cost - expectedRunUsd()) < 1e-9,
      `${run.id} cost ${run.total_cost}: its call counted once`,
    );
    assert.ok(run.completed_at, `${run.id} has its completion time`);
  }
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
export async function allFinalized(
  collections: Collections,
  accountId: string,
  count: number,
  timeoutMs: number,
): Promise<number> {
  const started = Date.now();
  await waitFor(
    async () =>
      (await collections.runs.countDocuments({ account_id: accountId, finalized: true })) === count
        ? true
        : undefined,
    {
      timeoutMs,
      intervalMs: 100,
      what: `${count} runs finalized`,
    },
  );
  return Date.now() - started;
}
