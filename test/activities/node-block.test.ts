/**
 * D36 `usage.provider_calls` of a big node run in blocks (activities/node-block.ts), on the real
 * stack with the fake provider and a loopback server that always answers 500: a row's calls that
 * failed count with the row once its page is stored (Temporal retried the block), a block that
 * gives up counts the calls of its unfinished rows, and a cancel those of the rows it left (one
 * failed, one in flight); the bill stays that of the stored rows.
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
  this.timeout(90_000);
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

  it('a cancel counts the calls of the rows it left unfinished: one failed, one in flight', async () => {
    const rows = ['flaky:blockcancel:100 a', 'hold:blockheld b', 'c', 'd', 'e'];
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('block-cancelled', '{{row}}', BIG));
    const runId = await startRun(ctx.svc.url, ctx.key, 'block-cancelled', { rows });
    try {
      // Row 0 failed; the block's attempt waits for row 1, whose call the fake holds.
      await waitFor(
        async () =>
          (ctx.fake.requestsWith('blockcancel').length === 1 &&
            ctx.fake.requestsWith('blockheld').length === 1) ||
          undefined,
        { what: 'one call of each row' },
      );
      const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
        key: ctx.key,
      });
      assert.equal(cancel.status, 202, JSON.stringify(cancel.body));
      const run = await waitForRun(ctx.svc.url, ctx.key, runId);
      assert.equal(run.status, 'cancelled');
      assert.equal(run.usage.provider_calls, 2);
      assert.equal(run.usage.by_node.ask.provider_calls, 2);
      near(run.total_cost, START_FEE_USD, 'total_cost');
    } finally {
      ctx.fake.release('blockheld');
    }
  });
});
