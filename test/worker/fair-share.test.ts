/**
 * D36 run controls on the real stack: `priority` orders one account's waiting provider calls, an
 * account's cap of concurrent provider calls holds at the provider, and accounts share the
 * worker's provider-call slots round-robin, so a small run is not starved by other accounts' big
 * batches (bench P8's scenario at a size that fits the suite). Assertions are on the order and
 * the counts the fake provider saw, never on wall-clock thresholds.
 */
import assert from 'node:assert/strict';
import { setAccountCap } from '../../store/accounts';
import { expectError } from '../support/api-assert';
import { PRICES } from '../support/execution';
import { publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { useService } from '../support/use-service';

/** The worker's slots for every account together, small so that the batches below queue. */
const WORKER_SLOTS = 8;

/** rows → batch → one llm call per row, answered after `ms` by the fake; the prompt carries the row. */
const batchDoc = (slug: string, ms: number, concurrency: number) => ({
  slug,
  name: slug,
  concurrency,
  nodes: [
    { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'json' },
    { id: 'each', type: 'batch' },
    { id: 'ask', type: 'llm', model: 'gpt-test', prompt: `slow:${ms} {{row}}` },
    { id: 'answers', type: 'user_result', label: 'Answers' },
  ],
  edges: [
    { from: 'rows', to: 'each', port: 'rows' },
    { from: 'each', to: 'ask', port: 'row' },
    { from: 'ask', to: 'answers' },
  ],
});

const rows = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}-${i}`);

describe('run priority and fair sharing of provider calls (D36)', function () {
  this.timeout(120_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: { PRICES, WORKER_PROVIDER_CALLS: String(WORKER_SLOTS) },
    credit: 100,
  });

  it('refuses a priority that is not low, normal or high with 400 naming the field', async () => {
    await publish(ctx.svc.url, ctx.key, batchDoc('prio-bad', 1, 4));
    for (const priority of ['urgent', 1, null, 'HIGH']) {
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'prio-bad', inputs: { rows: ['x'] }, priority },
      });
      expectError(res, { status: 400, type: 'invalid_request_error', param: 'priority' });
    }
  });

  it('holds an account to its cap and takes its high-priority run before its queued low ones', async () => {
    const CAP = 2;
    const { accountId, key } = await ctx.newAccount(100);
    await setAccountCap(ctx.svc.store.collections, accountId, 'max_provider_calls', CAP);
    const tag = `cap${Date.now()}`;
    await publish(ctx.svc.url, key, batchDoc('prio-batch', 150, 8));
    const lows: string[] = [];
    for (let r = 0; r < 3; r++)
      lows.push(
        await startRun(
          ctx.svc.url,
          key,
          'prio-batch',
          { rows: rows(`${tag}-low${r}`, 8) },
          {
            body: { priority: 'low' },
          },
        ),
      );
    // The low runs' calls are queued behind the cap before the high run arrives.
    await waitFor(async () => ctx.fake.requestsWith(`${tag}-low`).length >= CAP || undefined, {
      what: 'the first low calls',
    });
    const high = await startRun(
      ctx.svc.url,
      key,
      'prio-batch',
      { rows: rows(`${tag}-high`, 4) },
      {
        body: { priority: 'high' },
      },
    );
    for (const id of [high, ...lows])
      assert.equal((await waitForRun(ctx.svc.url, key, id, 60_000)).status, 'completed');

    assert.ok(
      ctx.fake.maxInFlightWith(tag) <= CAP,
      `at most ${CAP} calls of the account at once, saw ${ctx.fake.maxInFlightWith(tag)}`,
    );
    // Arrival order at the provider: the high run's 4 calls came before most of the 24 low ones,
    // which were all waiting when it started (first in, first out would put it after all of them).
    const order = ctx.fake.requestsWith(tag).map((r) => (r.prompt.includes('-high-') ? 'H' : 'L'));
    assert.equal(order.length, 28, order.join(''));
    const lastHigh = order.lastIndexOf('H');
    const lowsAfter = order.slice(lastHigh + 1).length;
    assert.ok(lowsAfter >= 12, `the high run overtook the queue: ${order.join('')}`);
  });

  it('shares the worker between accounts: a small run is not queued behind four big batches', async () => {
    const tag = `fair${Date.now()}`;
    const big = await Promise.all([1, 2, 3, 4].map(() => ctx.newAccount(100)));
    const small = await ctx.newAccount(100);
    const BATCH_ROWS = 600;
    const batches: Array<{ key: string; runId: string }> = [];
    for (const [i, account] of big.entries()) {
      await publish(ctx.svc.url, account.key, batchDoc('fair-batch', 20, 64));
      batches.push({
        key: account.key,
        runId: await startRun(ctx.svc.url, account.key, 'fair-batch', {
          rows: rows(`${tag}-big${i}`, BATCH_ROWS),
        }),
      });
    }
    await publish(ctx.svc.url, small.key, batchDoc('fair-small', 20, 4));
    await publish(ctx.svc.url, small.key, {
      slug: 'hello',
      name: 'Hello',
      nodes: [
        { id: 'name', type: 'user_input', label: 'Name', input_type: 'text' },
        { id: 'greet', type: 'text', template: 'Hello, {{name}}!' },
        { id: 'greeting', type: 'user_result', label: 'Greeting' },
      ],
      edges: [
        { from: 'name', to: 'greet', port: 'name' },
        { from: 'greet', to: 'greeting' },
      ],
    });
    // Every batch has calls queued for the worker's slots before the small runs start.
    await waitFor(
      async () =>
        big.every((_, i) => ctx.fake.requestsWith(`${tag}-big${i}-`).length > 0) || undefined,
      { what: 'every batch calling the provider' },
    );
    const smallRun = await startRun(ctx.svc.url, small.key, 'fair-small', {
      rows: rows(`${tag}-small`, 4),
    });
    const demo = await startRun(ctx.svc.url, small.key, 'hello', { name: 'Ada' });
    assert.equal((await waitForRun(ctx.svc.url, small.key, smallRun, 60_000)).status, 'completed');
    assert.equal((await waitForRun(ctx.svc.url, small.key, demo, 60_000)).status, 'completed');
    const bigDoneWhenSmallEnded = await Promise.all(
      batches.map(async (b) => {
        const res = await call(ctx.svc.url, 'GET', `/api/v1/runs/${b.runId}`, { key: b.key });
        return res.body.status as string;
      }),
    );
    for (const b of batches)
      assert.equal((await waitForRun(ctx.svc.url, b.key, b.runId, 90_000)).status, 'completed');

    // The worker never had more calls in flight than its slots, all accounts together.
    assert.ok(
      ctx.fake.maxInFlightWith(tag) <= WORKER_SLOTS,
      `saw ${ctx.fake.maxInFlightWith(tag)} calls at once`,
    );
    // Round-robin: from the small run's first call to its last, each batch got a few slots at most
    // (a queue in arrival order would have put its 4 calls behind the thousands already waiting).
    const order = ctx.fake.requestsWith(tag);
    const first = order.findIndex((r) => r.prompt.includes('-small-'));
    const last = order.findLastIndex((r) => r.prompt.includes('-small-'));
    assert.equal(order.filter((r) => r.prompt.includes('-small-')).length, 4);
    const bigBetween = order.slice(first, last + 1).filter((r) => r.prompt.includes('-big')).length;
    assert.ok(
      bigBetween <= 4 * 4 + WORKER_SLOTS,
      `${bigBetween} batch calls between the small run's`,
    );
    // Both small runs ended while every batch was still running.
    assert.deepEqual(
      bigDoneWhenSmallEnded.filter((s) => s === 'completed'),
      [],
      `batches when the small runs ended: ${bigDoneWhenSmallEnded.join(', ')}`,
    );
  });
});
