/**
 * D36 `usage.provider_calls` of a big node run in blocks (activities/node-block.ts), on the real
 * stack with the fake provider and a loopback server that always answers 500: a row's calls that
 * failed count with the row once its page is stored, a block that gives up counts the calls of
 * its unfinished rows, and a cancel those of the rows it left (one waiting for its next attempt,
 * one in flight); the bill stays that of the stored rows. A row's transient failures are retried
 * in its block, each row with its own attempts (activities/row-retries.ts): scattered 503s no
 * longer fail the node, a `Retry-After` is waited for, a row that keeps failing fails the node.
 */
import assert from 'node:assert/strict';
import { publish, rowsWorkflow, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { runToEnd, startRun } from '../support/runs';
import { LLM_CALL_USD, PRICES, START_FEE_USD } from '../support/execution';
import { useService } from '../support/use-service';
import { startFailingServer } from '../fakes/failing-server';

const near = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual}, expected ${expected}`);

// Concurrency 2: a node of more than 4 rows is big (D35) and runs in one block of two lanes.
const BIG = { concurrency: 2 };

describe('block usage: every provider call made counts (D36)', function () {
  this.timeout(120_000);
  const ctx = useService({ fakeOpenAI: true, env: { PRICES, ALLOW_PRIVATE_NETWORK: 'true' } });

  it('a row retried after two 503s counts its three calls from its stored page, and costs one', async () => {
    const rows = [
      'flaky:blockflaky:2 r0',
      'blockrow r1',
      'blockrow r2',
      'blockrow r3',
      'blockrow r4',
    ];
    const run = await runToEnd(ctx.svc.url, ctx.key, rowsWorkflow('block-flaky', '{{row}}', BIG), {
      rows,
    });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const { itemBlocks } = ctx.svc.store.collections;
    assert.equal(await itemBlocks.countDocuments({ run_id: run.id, node_id: 'ask' }), 1); // a block's page
    const made =
      ctx.fake.requestsWith('blockflaky').length + ctx.fake.requestsWith('blockrow').length;
    assert.equal(ctx.fake.requestsWith('blockflaky').length, 3);
    assert.equal(run.usage.provider_calls, made);
    assert.equal(run.usage.by_node.ask.provider_calls, made);
    assert.equal(run.usage.by_node.ask.items_completed, 5);
    assert.equal(run.usage.input_tokens, 5 * 100);
    near(run.usage.by_node.ask.cost, 5 * LLM_CALL_USD, 'the node cost');
    near(run.total_cost, START_FEE_USD + 5 * LLM_CALL_USD, 'total_cost');
  });

  it('a block of http_request rows that gives up counts every call it made, billed nothing', async () => {
    const target = await startFailingServer();
    try {
      const doc = {
        slug: 'block-gives-up',
        ...BIG,
        nodes: [
          { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'json' },
          { id: 'split', type: 'batch' },
          { id: 'get', type: 'http_request', url: `${target.url}/{{row}}` },
          { id: 'out', type: 'user_result', label: 'Out' },
        ],
        edges: [
          { from: 'rows', to: 'split', port: 'rows' },
          { from: 'split', to: 'get', port: 'row' },
          { from: 'get', to: 'out' },
        ],
      };
      const run = await runToEnd(ctx.svc.url, ctx.key, doc, { rows: [0, 1, 2, 3, 4, 5] });
      assert.equal(run.status, 'failed');
      assert.match(run.error, /gave up after 5 attempt\(s\)/);
      assert.ok(target.hits() >= 5, `${target.hits()} calls`);
      assert.equal(run.usage.provider_calls, target.hits());
      assert.equal(run.usage.by_node.get.provider_calls, target.hits());
      assert.equal(run.usage.by_node.get.cost, 0);
      near(run.total_cost, START_FEE_USD, 'total_cost');
    } finally {
      await target.close();
    }
  });

  it('rows that fail transiently once or twice are retried in their block: all complete, each billed once', async () => {
    // 12 transient failures in one block: before, they shared its 5 attempts and failed the node.
    const once = [1, 3, 5, 7, 9, 11, 13, 15];
    const twice = [17, 18];
    const rows = Array.from({ length: 20 }, (_, i) =>
      once.includes(i)
        ? `flaky:scattered${i}:1 r${i}`
        : twice.includes(i)
          ? `flaky:scattered${i}:2 r${i}`
          : `scattered r${i}`,
    );
    const run = await runToEnd(
      ctx.svc.url,
      ctx.key,
      rowsWorkflow('block-scattered', '{{row}}', BIG),
      { rows },
    );
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const { itemBlocks } = ctx.svc.store.collections;
    assert.equal(await itemBlocks.countDocuments({ run_id: run.id, node_id: 'ask' }), 1); // one block
    for (const i of once)
      assert.equal(ctx.fake.requestsWith(`scattered${i}:`).length, 2, `row ${i}`);
    for (const i of twice)
      assert.equal(ctx.fake.requestsWith(`scattered${i}:`).length, 3, `row ${i}`);
    const made = ctx.fake.requestsWith('scattered').length;
    assert.equal(made, 20 + once.length + 2 * twice.length);
    assert.equal(run.usage.provider_calls, made);
    assert.equal(run.usage.by_node.ask.provider_calls, made);
    assert.equal(run.usage.by_node.ask.items_completed, 20);
    assert.equal(run.usage.input_tokens, 20 * 100); // failed calls add no tokens
    near(run.usage.by_node.ask.cost, 20 * LLM_CALL_USD, 'the node cost');
    near(run.total_cost, START_FEE_USD + 20 * LLM_CALL_USD, 'total_cost');
  });

  it('a row that fails NODE_MAX_ATTEMPTS times fails the node, the rows finished billed', async () => {
    const rows = ['flaky:blockdown:100 r0', 'downrow r1', 'downrow r2', 'downrow r3', 'downrow r4'];
    const run = await runToEnd(
      ctx.svc.url,
      ctx.key,
      rowsWorkflow('block-row-down', '{{row}}', BIG),
      { rows },
    );
    assert.equal(run.status, 'failed');
    assert.match(
      run.error,
      /^node 'ask' \(llm\): gave up after 5 attempt\(s\): openai answered 503: The server is overloaded$/,
    );
    assert.equal(ctx.fake.requestsWith('blockdown').length, 5);
    const answered = ctx.fake.requestsWith('downrow').filter((r) => r.status === 200).length;
    const made =
      ctx.fake.requestsWith('blockdown').length + ctx.fake.requestsWith('downrow').length;
    assert.equal(run.usage.provider_calls, made);
    assert.equal(run.usage.by_node.ask.items_completed, answered);
    near(run.usage.by_node.ask.cost, answered * LLM_CALL_USD, 'the node cost');
    near(run.total_cost, START_FEE_USD + answered * LLM_CALL_USD, 'total_cost');
  });

  it("a 429's Retry-After is waited for, past the heartbeat timeout, by the row alone", async () => {
    // 12 s: longer than the backoff (50 ms here) and than the block's heartbeat timeout (10 s).
    const rows = [
      'throttle:blockslow:1:12 r0',
      'slowrow r1',
      'slowrow r2',
      'slowrow r3',
      'slowrow r4',
    ];
    const run = await runToEnd(
      ctx.svc.url,
      ctx.key,
      rowsWorkflow('block-retry-after', '{{row}}', BIG),
      { rows },
    );
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const [first, second, ...more] = ctx.fake.requestsWith('blockslow');
    assert.deepEqual([first.status, second?.status, more.length], [429, 200, 0]);
    const waited = second.startedAt - first.endedAt!;
    assert.ok(waited >= 11_500 && waited < 20_000, `waited ${waited} ms`);
    // The other rows ran meanwhile, once each.
    assert.equal(ctx.fake.requestsWith('slowrow').length, 4);
    assert.ok(ctx.fake.requestsWith('slowrow').every((r) => r.endedAt! < second.startedAt));
    assert.equal(run.usage.provider_calls, 6);
    near(run.total_cost, START_FEE_USD + 5 * LLM_CALL_USD, 'total_cost');
  });

  it('a cancel ends a row waiting for its next attempt at once, counting its call, and one in flight', async () => {
    // Row 0 answered 429 and waits 30 s for its next call; row 1's call is held by the fake.
    const rows = ['throttle:blockcancel:100:30 a', 'hold:blockheld b', 'c', 'd', 'e'];
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('block-cancelled', '{{row}}', BIG));
    const runId = await startRun(ctx.svc.url, ctx.key, 'block-cancelled', { rows });
    try {
      await waitFor(
        async () =>
          (ctx.fake.requestsWith('blockcancel').length === 1 &&
            ctx.fake.requestsWith('blockheld').length === 1) ||
          undefined,
        { what: 'one call of each row' },
      );
      const asked = performance.now();
      const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
        key: ctx.key,
      });
      assert.equal(cancel.status, 202, JSON.stringify(cancel.body));
      const run = await waitForRun(ctx.svc.url, ctx.key, runId);
      const took = performance.now() - asked;
      assert.equal(run.status, 'cancelled');
      assert.ok(took < 10_000, `the cancel took ${took} ms`);
      assert.equal(ctx.fake.requestsWith('blockcancel').length, 1);
      assert.equal(run.usage.provider_calls, 2);
      assert.equal(run.usage.by_node.ask.provider_calls, 2);
      near(run.total_cost, START_FEE_USD, 'total_cost');
    } finally {
      ctx.fake.release('blockheld');
    }
  });
});
