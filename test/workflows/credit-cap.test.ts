/**
 * D17 on the real stack: a run whose priced calls are counted only while it works (rows from an
 * uploaded file) holds one call at its start; it is capped at its hold, which grows from the
 * account's available credit as it works (workflows/cost-cap.ts CreditSource, store/credit-holds.ts
 * extendRunHold). With too little credit the run stops starting work and fails naming the credit,
 * its finished items readable and billed; with enough it completes; either way every hold, the
 * start's and the ones added, is given back at its end.
 */
import assert from 'node:assert/strict';
import { accountCredit } from '../../store/credit-holds';
import { publish, rowsWorkflow, waitForRun } from '../support/fixtures';
import { uploadFile } from '../support/files';
import { call, waitFor } from '../support/http';
import { expectError } from '../support/api-assert';
import { bookedDebit, startRun } from '../support/runs';
import { money } from '../support/reruns';
import { useService } from '../support/use-service';

// The fake answers every chat call with 100 prompt and 50 completion tokens: $0.002 a call,
// budgeted at $0.002 (CREDIT_HOLD_PER_CALL_USD).
const PRICES = { 'gpt-test': { input_per_mtok: 10, output_per_mtok: 20 } };
const FEE = 0.001;
const CALL = 0.002;
const ROWS = 40;

describe('a run capped at its hold, grown from the account credit (D17)', function () {
  this.timeout(120_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: {
      PRICES: JSON.stringify(PRICES),
      START_FEE_USD: String(FEE),
      CREDIT_HOLD_PER_CALL_USD: String(CALL),
    },
  });

  /** Rows from a file → batch → one `gpt-test` call a row. */
  const workflow = rowsWorkflow('file-rows', '{{row}}', { concurrency: 4, input_type: 'file' });

  /** Starts the run of ROWS file rows tagged `tag` on a new account holding `credit`, and waits for its end. */
  async function runOnAccount(credit: number, tag: string) {
    const { accountId, key } = await ctx.newAccount(credit);
    await publish(ctx.svc.url, key, workflow);
    const lines = Array.from({ length: ROWS }, (_, i) => JSON.stringify(`${tag} ${i}`)).join('\n');
    const file = await uploadFile(ctx.svc.url, key, `${tag}.jsonl`, lines);
    const runId = await startRun(ctx.svc.url, key, 'file-rows', { rows: file });
    const run = await waitForRun(ctx.svc.url, key, runId);
    const c = ctx.svc.store.collections;
    const record = await c.runs.findOne({ _id: runId });
    const debit = await bookedDebit(c, runId);
    // Every hold given back: the run's own entry releases the start's and the added ones.
    const left = await waitFor(
      async () => {
        const now = await accountCredit(c, accountId);
        return now.held_usd === 0 ? now : undefined;
      },
      { what: 'the run’s holds to be given back' },
    );
    return { accountId, key, runId, run, record, debit, credit: left };
  }

  it('stops at the account credit: fails naming it, billed and readable for what it finished', async () => {
    const credit = 0.02; // the fee and 9 calls
    const out = await runOnAccount(credit, 'short');
    assert.equal(out.run.status, 'failed', JSON.stringify(out.run));
    assert.match(out.run.error, /^insufficient credits: the account's available credit ran out/);
    const calls = ctx.fake.requestsWith('short ').length;
    assert.ok(calls >= 5 && calls <= 10, `${calls} provider calls`); // all 40 on the old code
    assert.equal(out.run.total_cost, money(FEE + calls * CALL));
    assert.equal(-out.debit.amount_usd, out.run.total_cost);
    // Its hold grew from $0.003 to what the account had, never past it.
    assert.ok(out.record?.hold_usd !== undefined && out.record.hold_usd <= credit + 1e-9);
    assert.ok(Object.keys(out.record?.hold_grants ?? {}).length >= 1);
    assert.equal(out.debit.released_usd, out.record?.hold_usd);
    // The balance goes below zero by at most one call's overrun (here: none, the budget is exact).
    assert.ok(out.credit.balance_usd >= 0, `balance ${out.credit.balance_usd}`);
    const res = await call(
      ctx.svc.url,
      'GET',
      `/api/v1/runs/${out.runId}/outputs/answers?limit=100`,
      {
        key: out.key,
      },
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const done = (res.body.data as Array<{ status: string }>).filter(
      (i) => i.status === 'completed',
    );
    assert.equal(done.length, calls);
  });

  it('completes with enough credit, its hold grown as it needed, all of it given back', async () => {
    const out = await runOnAccount(10, 'rich');
    assert.equal(out.run.status, 'completed', JSON.stringify(out.run.error));
    assert.equal(ctx.fake.requestsWith('rich ').length, ROWS);
    assert.equal(out.run.total_cost, money(FEE + ROWS * CALL));
    assert.ok(Object.keys(out.record?.hold_grants ?? {}).length >= 1, 'the hold grew');
    assert.ok((out.record?.hold_usd ?? 0) >= out.run.total_cost);
    assert.equal(out.debit.released_usd, out.record?.hold_usd);
    assert.equal(out.credit.balance_usd, money(10 - out.run.total_cost));
    assert.equal(out.credit.available_usd, out.credit.balance_usd);
  });

  it('starts a max_cost run only when the account’s available credit covers its cap (D36): a larger cap is 402', async () => {
    const { key } = await ctx.newAccount(0.02);
    await publish(ctx.svc.url, key, workflow);
    const lines = Array.from({ length: ROWS }, (_, i) => JSON.stringify(`capped ${i}`)).join('\n');
    const file = await uploadFile(ctx.svc.url, key, 'capped.jsonl', lines);
    const start = (max_cost: number) =>
      call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key,
        body: { workflowId: 'file-rows', inputs: { rows: file }, max_cost },
      });
    // Before: admitted, all 40 calls made, the balance left at −$0.061.
    const over = await start(1000);
    expectError(over, { status: 402, type: 'insufficient_credits', code: 'insufficient_credits' });
    assert.match(
      over.body.error.message,
      /would hold \$1000\.00 \(its max_cost\), more than the \$0\.02 /,
    );
    assert.equal(ctx.fake.requestsWith('capped ').length, 0);
    const within = await start(0.015);
    assert.equal(within.status, 202, JSON.stringify(within.body));
    const run = await waitForRun(ctx.svc.url, key, within.body.run_id);
    assert.equal(run.status, 'failed');
    assert.match(run.error, /^cost limit reached/);
    assert.ok(run.total_cost <= 0.015);
  });
});
