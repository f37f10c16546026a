/**
 * D36 `max_cost` on the real stack for big nodes (blocks of stored rows, workflows/cost-cap.ts and
 * run-workflow.ts runBlock): a block that fits the cap only in part runs the rows that fit, and
 * once their real cost is known (far below their per-call budget) the block asks the cap again for
 * the rows it left (patch `cost-cap-shrunk-blocks`). The run stops at its cap only when not one row
 * fits with nothing in flight, so it spends up to about one per-call budget below the cap and
 * never more; its bill equals the ledger, its usage and what the provider answered.
 */
import assert from 'node:assert/strict';
import { publish, waitForRun } from '../support/fixtures';
import { uploadFile } from '../support/files';
import { call } from '../support/http';
import { bookedDebit, startRun } from '../support/runs';
import { temporalClient } from '../support/service';
import { useService } from '../support/use-service';
import type { RecordedRequest } from '../fakes/openai';

// A row asks `tokens:N` (N from 1 to 80): the fake reports N prompt and N completion tokens, so a
// call of gpt-a costs 75·N × 1e-8 USD (at most $0.00006) and one of gpt-b 1250·N × 1e-8 (at most
// $0.001), each budgeted at $0.001 (CREDIT_HOLD_PER_CALL_USD): 17 to 1,333 times what it costs.
const PRICES = {
  'gpt-a': { input_per_mtok: 0.15, output_per_mtok: 0.6 },
  'gpt-b': { input_per_mtok: 2.5, output_per_mtok: 10 },
};
const FEE = 0.001;
const PER_CALL = 0.001;
/** 1e-8 USD a token, prompt and completion, by model. */
const UNITS: Record<string, [number, number]> = { 'gpt-a': [15, 60], 'gpt-b': [250, 1000] };

const nano = (usd: number) => Math.round(usd * 1e9);
const tokensOf = (i: number) => 1 + ((i * 37) % 80);

/** What one answered call cost, nano-USD, by the price table. */
function priceNano(r: RecordedRequest): number {
  const [pin, pout] = UNITS[r.body.model as string];
  const n = Number(/tokens:(\d+)/.exec(r.prompt)![1]);
  return n * (pin + pout) * 10;
}

/** Rows of a file → batch → `llm` nodes one after the other (`models`) → result "Answers". */
function chainWorkflow(slug: string, models: string[], concurrency: number) {
  const llms = models.map((model, k) => ({
    id: `a${k + 1}`,
    type: 'llm',
    model,
    prompt: k === 0 ? '{{row}}' : 'next {{prev}}',
  }));
  return {
    slug,
    concurrency,
    nodes: [
      { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'file' },
      { id: 'split', type: 'batch' },
      ...llms,
      { id: 'out', type: 'user_result', label: 'Answers' },
    ],
    edges: [
      { from: 'rows', to: 'split', port: 'rows' },
      { from: 'split', to: 'a1', port: 'row' },
      ...llms.slice(1).map((node, k) => ({ from: llms[k].id, to: node.id, port: 'prev' })),
      { from: llms.at(-1)!.id, to: 'out' },
    ],
  };
}

describe('max_cost on big nodes: a shrunk block asks again once its cost is known (D36)', function () {
  this.timeout(300_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: {
      PRICES: JSON.stringify(PRICES),
      START_FEE_USD: String(FEE),
      CREDIT_HOLD_PER_CALL_USD: String(PER_CALL),
    },
  });

  /** The markers of patch `cost-cap-shrunk-blocks` in the run's history. */
  async function markers(runId: string): Promise<number> {
    const history = await temporalClient(ctx.svc).workflow.getHandle(runId).fetchHistory();
    return (history.events ?? []).filter((e) => {
      const marker = e.markerRecordedEventAttributes;
      const data = marker?.details?.['patch-data']?.payloads?.[0]?.data;
      return (
        marker?.markerName === 'core_patch' &&
        !!data &&
        JSON.parse(Buffer.from(data).toString()).id === 'cost-cap-shrunk-blocks'
      );
    }).length;
  }

  /** Runs `slug` over a JSON Lines file of 300 rows (`row(i)`), with `options` (`max_cost`); answers it ended. */
  async function runOverRows(
    key: string,
    slug: string,
    row: (i: number) => string,
    options: Record<string, unknown> = {},
  ) {
    const lines = Array.from({ length: 300 }, (_, i) => JSON.stringify(row(i))).join('\n');
    const file = await uploadFile(ctx.svc.url, key, `${slug}.jsonl`, lines);
    const runId = await startRun(ctx.svc.url, key, slug, { rows: file }, { body: options });
    return { runId, run: await waitForRun(ctx.svc.url, key, runId, 240_000) };
  }

  /** Runs 300 file rows tagged `tag` through `models` at `concurrency`, capped at `maxCost`. */
  async function capped(tag: string, models: string[], concurrency: number, maxCost: number) {
    const slug = `cap-${tag.toLowerCase()}`;
    await publish(ctx.svc.url, ctx.key, chainWorkflow(slug, models, concurrency));
    const { runId, run } = await runOverRows(
      ctx.key,
      slug,
      (i) => `${tag}r${i} tokens:${tokensOf(i)}`,
      {
        max_cost: maxCost,
      },
    );
    const debit = await bookedDebit(ctx.svc.store.collections, runId);
    const calls = ctx.fake.requestsWith(`${tag}r`);
    const res = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/answers?limit=1000`, {
      key: ctx.key,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const items = res.body.data as Array<{ status: string }>;
    // The bill: the ledger, total_cost, the usage by node and the provider's answers agree.
    assert.equal(run.status, 'failed', JSON.stringify(run));
    assert.match(run.error, /^cost limit reached: .* max_cost of \$/);
    assert.ok(calls.every((r) => !r.aborted));
    const provider = nano(FEE) + calls.reduce((s, r) => s + priceNano(r), 0);
    const byNode = Object.values(run.usage.by_node as Record<string, { cost: number }>);
    assert.equal(-nano(debit.amount_usd), nano(run.total_cost));
    assert.equal(nano(run.total_cost), provider);
    assert.equal(nano(FEE) + byNode.reduce((s, n) => s + nano(n.cost), 0), provider);
    assert.equal(run.usage.provider_calls, calls.length);
    assert.ok(run.total_cost <= maxCost, `${run.total_cost} > ${maxCost}`);
    return { runId, run, calls, items };
  }

  it('a single big node spends up to one per-call budget below the cap, never past it', async () => {
    // 300 rows of gpt-b (≈ $0.0005 a call), 8 at once: blocks of 100 rows. Before: the first
    // block shrank to 29 rows and the run ended there, at $0.0151 of its $0.03.
    const maxCost = 0.03;
    const { runId, run, calls, items } = await capped('CS', ['gpt-b'], 8, maxCost);
    assert.ok(run.total_cost > maxCost - PER_CALL, `spent ${run.total_cost} of ${maxCost}`);
    assert.ok((await markers(runId)) >= 1, 'the patch marker of a shrunk block');
    assert.ok(calls.length > 29, `${calls.length} calls`);
    assert.equal(items.filter((i) => i.status === 'completed').length, calls.length);
  });

  it('a chain batch → llm → llm: the second llm runs too, and the run spends close to the cap', async () => {
    // 300 rows, 16 at once. Before: the first llm took the whole cap in its first block (49
    // calls, $0.00247 of $0.05) and the second never ran: 49 paid calls and no result.
    const maxCost = 0.05;
    const { runId, run, calls, items } = await capped('CC', ['gpt-a', 'gpt-b'], 16, maxCost);
    assert.ok(run.total_cost > maxCost - PER_CALL, `spent ${run.total_cost} of ${maxCost}`);
    assert.ok((await markers(runId)) >= 1, 'the patch marker of a shrunk block');
    const second = calls.filter((r) => r.body.model === 'gpt-b').length;
    assert.ok(second > 0, 'the second llm made no call');
    assert.equal(run.usage.by_node.a2.items_completed, second);
    assert.equal(items.filter((i) => i.status === 'completed').length, second);
  });

  it('a run without max_cost stopped by its account credit keeps its end (D17) and asks no such patch', async () => {
    const { key } = await ctx.newAccount(0.03);
    await publish(ctx.svc.url, key, chainWorkflow('cap-credit', ['gpt-b'], 8));
    const { runId, run } = await runOverRows(
      key,
      'cap-credit',
      (i) => `CRr${i} tokens:${tokensOf(i)}`,
    );
    assert.equal(run.status, 'failed', JSON.stringify(run));
    assert.match(run.error, /^insufficient credits: /);
    assert.equal(await markers(runId), 0);
  });

  it('a re-run of failed items whose block shrinks runs each failed row once (D38), then completes', async () => {
    // 300 rows of gpt-a, a third refused once (400: the item fails, unbilled), capped at $0.05:
    // the parent completes (before: it stopped after 49 calls), and its re-run of the 100 failed
    // rows is one block of them, shrunk to 49 rows and then asked again for the rest, which reads
    // the pages it wrote instead of running its first rows again.
    const maxCost = 0.05;
    const slug = 'cap-rerun';
    await publish(ctx.svc.url, ctx.key, chainWorkflow(slug, ['gpt-a'], 16));
    const { runId: parentId, run: parent } = await runOverRows(
      ctx.key,
      slug,
      (i) => `RRr${i} tokens:${tokensOf(i)}${i % 3 === 0 ? ` refuseonce:RRo${i}` : ''}`,
      { max_cost: maxCost },
    );
    assert.equal(parent.status, 'completed', JSON.stringify(parent));
    assert.equal(parent.usage.by_node.a1.items_failed, 100);
    const since = ctx.fake.requests.length;
    const res = await call(ctx.svc.url, 'POST', `/api/v1/runs/${parentId}/rerun`, {
      key: ctx.key,
      body: { items: 'failed' },
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const runId = res.body.run_id as string;
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 240_000);
    assert.equal(run.status, 'completed', JSON.stringify(run));
    const calls = ctx.fake.requests.slice(since).filter((r) => r.prompt.includes('RRr'));
    const rows = calls.map((r) => /RRr(\d+) /.exec(r.prompt)![1]);
    assert.equal(new Set(rows).size, calls.length, 'a row called twice');
    assert.equal(calls.length, 100);
    assert.ok(rows.every((row) => Number(row) % 3 === 0));
    const debit = await bookedDebit(ctx.svc.store.collections, runId);
    assert.equal(-nano(debit.amount_usd), nano(run.total_cost));
    assert.equal(nano(run.total_cost), nano(FEE) + calls.reduce((s, r) => s + priceNano(r), 0));
    assert.equal(run.usage.by_node.a1.provider_calls, 100);
    assert.ok((await markers(runId)) >= 1, 'the patch marker of a shrunk block');
  });
});
