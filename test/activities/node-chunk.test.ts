/**
 * D36 `usage.provider_calls` of a node run in chunks (activities/node-chunk.ts), on the real stack
 * with the fake provider and a loopback server that always answers 500: every call made counts,
 * also those that failed and were tried again (Temporal's retries of the chunk), those of a node
 * that gave up, and the one in flight a cancel aborted; the bill stays that of the rows that
 * ended. (A node of up to twice the run's concurrency runs one chunk a row, workflows/chunk-plan.ts.)
 */
import assert from 'node:assert/strict';
import { batchWorkflow, publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { runToEnd, startRun } from '../support/runs';
import { LLM_CALL_USD, PRICES, START_FEE_USD } from '../support/execution';
import { useService } from '../support/use-service';
import { startFailingServer } from '../fakes/failing-server';

const near = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual}, expected ${expected}`);

describe('chunk usage: every provider call made counts (D36)', function () {
  this.timeout(90_000);
  const ctx = useService({ fakeOpenAI: true, env: { PRICES, ALLOW_PRIVATE_NETWORK: 'true' } });

  it('a row retried after two 503s counts its three calls, and costs one', async () => {
    const run = await runToEnd(
      ctx.svc.url,
      ctx.key,
      batchWorkflow('chunk-flaky', ['flaky:chunkflaky:2 one', 'two']),
    );
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const made = ctx.fake.requestsWith('chunkflaky').length + ctx.fake.requestsWith('two').length;
    assert.equal(made, 4);
    assert.equal(run.usage.provider_calls, 4);
    assert.equal(run.usage.by_node.ask.provider_calls, 4);
    // The failed calls reported no tokens and are not billed: two rows' answers are.
    assert.equal(run.usage.input_tokens, 200);
    assert.equal(run.usage.output_tokens, 100);
    near(run.usage.by_node.ask.cost, 2 * LLM_CALL_USD, 'the node cost');
    near(run.total_cost, START_FEE_USD + 2 * LLM_CALL_USD, 'total_cost');
  });

  it("a 429's Retry-After is the wait before the chunk's next attempt, where the backoff is shorter", async () => {
    // 3 s, against the suite's backoff of 50 ms.
    const run = await runToEnd(
      ctx.svc.url,
      ctx.key,
      batchWorkflow('chunk-retry-after', ['throttle:chunkslow:1:3 one', 'two']),
    );
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const [first, second, ...more] = ctx.fake.requestsWith('chunkslow');
    assert.deepEqual([first.status, second?.status, more.length], [429, 200, 0]);
    const waited = second.startedAt - first.endedAt!;
    assert.ok(waited >= 2_500 && waited < 10_000, `waited ${waited} ms`);
    assert.equal(run.usage.provider_calls, 3);
    near(run.total_cost, START_FEE_USD + 2 * LLM_CALL_USD, 'total_cost');
  });

  it('an http_request that gives up after 5 attempts counts its 5 calls, billed nothing', async () => {
    const target = await startFailingServer();
    try {
      const run = await runToEnd(ctx.svc.url, ctx.key, {
        slug: 'chunk-gives-up',
        nodes: [
          { id: 'get', type: 'http_request', url: target.url },
          { id: 'out', type: 'user_result', label: 'Out' },
        ],
        edges: [{ from: 'get', to: 'out' }],
      } as { slug: string });
      assert.equal(run.status, 'failed');
      assert.match(run.error, /gave up after 5 attempt\(s\)/);
      assert.equal(target.hits(), 5);
      assert.equal(run.usage.provider_calls, 5);
      assert.deepEqual(run.usage.by_node.get, {
        provider_calls: 5,
        input_tokens: 0,
        output_tokens: 0,
        cost: 0,
        items_completed: 0,
        items_failed: 0,
      });
      near(run.total_cost, START_FEE_USD, 'total_cost');
    } finally {
      await target.close();
    }
  });

  it('a node that gives up counts its calls beside those of the rows that ended, billed as before', async () => {
    const run = await runToEnd(
      ctx.svc.url,
      ctx.key,
      batchWorkflow('chunk-lost-rows', ['flaky:chunklost:100 x', 'fine y']),
    );
    assert.equal(run.status, 'failed');
    assert.match(run.error, /gave up after 5 attempt\(s\)/);
    assert.equal(ctx.fake.requestsWith('chunklost').length, 5);
    assert.equal(ctx.fake.requestsWith('fine y').length, 1);
    assert.equal(run.usage.provider_calls, 6);
    assert.equal(run.usage.input_tokens, 100);
    // The row that ended is billed; the five failed calls are not.
    near(run.usage.by_node.ask.cost, LLM_CALL_USD, 'the node cost');
    near(run.total_cost, START_FEE_USD + LLM_CALL_USD, 'total_cost');
  });

  it('a cancel counts the call in flight it aborted, billed nothing', async () => {
    await publish(ctx.svc.url, ctx.key, batchWorkflow('chunk-cancelled', ['hold:chunkheld b']));
    const runId = await startRun(ctx.svc.url, ctx.key, 'chunk-cancelled');
    try {
      await waitFor(async () => ctx.fake.requestsWith('chunkheld').length === 1 || undefined, {
        what: 'the call the fake holds',
      });
      const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
        key: ctx.key,
      });
      assert.equal(cancel.status, 202, JSON.stringify(cancel.body));
      const run = await waitForRun(ctx.svc.url, ctx.key, runId);
      assert.equal(run.status, 'cancelled');
      assert.equal(run.usage.provider_calls, 1);
      assert.equal(run.usage.by_node.ask.provider_calls, 1);
      near(run.total_cost, START_FEE_USD, 'total_cost');
    } finally {
      ctx.fake.release('chunkheld');
    }
  });
});
