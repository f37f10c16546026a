// D36 run controls on the real stack: `max_cost` (the cap, the hold, the bill), `timeout_seconds`
// (the deadline, provider calls aborted, finished items readable) and `usage` (GET, list, webhook,
// live, metrics), with the 400s of bad values naming their field.
import assert from 'node:assert/strict';
import {
  batchWorkflow,
  greetingWorkflow,
  publish,
  rowsWorkflow,
  waitForRun,
} from '../../support/fixtures';
import { expectError } from '../../support/api-assert';
import { call, waitFor } from '../../support/http';
import { bookedDebit, startRun } from '../../support/runs';
import { money } from '../../support/reruns';
import { OUTPUT_TOKENS_MAX } from '../../../activities/llm';
import { useService } from '../../support/use-service';
import { startWebhookReceiver, type WebhookReceiver } from '../../fakes/webhook-receiver';

// The fake answers every chat call with 100 prompt and 50 completion tokens: $0.002 a call of
// gpt-test, $0.02 of gpt-dear; calls are budgeted at $0.002 (CREDIT_HOLD_PER_CALL_USD).
const PRICES = {
  'gpt-test': { input_per_mtok: 10, output_per_mtok: 20 },
  'gpt-dear': { input_per_mtok: 100, output_per_mtok: 200 },
};
const FEE = 0.001;
const CALL = 0.002;

/** The metric sample of `name{labels}` in a Prometheus text, 0 when absent. */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

describe('run controls (D36)', function () {
  this.timeout(90_000);
  let receiver: WebhookReceiver;
  const ctx = useService({
    fakeOpenAI: true,
    env: {
      PRICES: JSON.stringify(PRICES),
      CREDIT_HOLD_PER_CALL_USD: String(CALL),
      RUN_TIMEOUT_MS: '600000',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORK: 'true',
    },
  });

  before(async () => {
    receiver = await startWebhookReceiver();
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('rows'));
    const dear = rowsWorkflow('dear');
    dear.nodes[2] = { id: 'ask', type: 'llm', model: 'gpt-dear', prompt: '{{row}}' };
    await publish(ctx.svc.url, ctx.key, dear);
  });
  after(async () => {
    await receiver?.close();
  });

  const rows = (n: number, row: (i: number) => string) => ({
    rows: Array.from({ length: n }, (_, i) => row(i)),
  });
  const outputs = async (runId: string) => {
    const res = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/answers?limit=1000`, {
      key: ctx.key,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.data as Array<{ status: string; parts: Array<{ text?: string }> }>;
  };
  /** The run's one debit (and no other entry of it), once its end is booked. */
  const debit = async (runId: string) => {
    const c = ctx.svc.store.collections;
    const booked = await bookedDebit(c, runId);
    assert.equal(await c.ledger.countDocuments({ run_id: runId }), 1);
    return -booked.amount_usd;
  };

  describe('bad values are 400 invalid_request_error naming the field', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['max_cost as a string', { max_cost: '5' }, 'max_cost'],
      ['max_cost of 0', { max_cost: 0 }, 'max_cost'],
      ['a negative max_cost', { max_cost: -1 }, 'max_cost'],
      ['max_cost below the start fee', { max_cost: 0.0005 }, 'max_cost'],
      ['timeout_seconds not an integer', { timeout_seconds: 1.5 }, 'timeout_seconds'],
      ['timeout_seconds of 0', { timeout_seconds: 0 }, 'timeout_seconds'],
      ['timeout_seconds past the operator limit', { timeout_seconds: 601 }, 'timeout_seconds'],
    ];
    for (const [what, fields, param] of cases)
      it(what, async () => {
        const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
          key: ctx.key,
          body: { workflowId: 'rows', inputs: rows(1, () => 'x'), ...fields },
        });
        const error = expectError(res, { status: 400, type: 'invalid_request_error', param });
        assert.equal(error.code, undefined); // "wrong request fields": no code of their own (docs/api.md)
      });

    it('takes the operator limit itself', async () => {
      const runId = await startRun(
        ctx.svc.url,
        ctx.key,
        'rows',
        rows(1, () => 'x'),
        {
          body: { timeout_seconds: 600, max_cost: FEE },
        },
      );
      // A cap of the start fee alone: not one call fits, the run fails having billed the fee only.
      const run = await waitForRun(ctx.svc.url, ctx.key, runId);
      assert.equal(run.status, 'failed');
      assert.match(run.error, /cost limit reached/);
      assert.equal(run.total_cost, FEE);
      assert.equal(ctx.fake.requests.filter((r) => r.prompt === 'x').length, 0);
    });
  });

  it('max_cost reached mid-batch: in-flight calls finish, nothing new starts, billed ≤ cap, finished items readable', async () => {
    const maxCost = FEE + 4 * CALL; // room for exactly 4 of the 10 rows
    const runId = await startRun(
      ctx.svc.url,
      ctx.key,
      'rows',
      rows(10, (i) => `cap-a ${i} slow:300`),
      {
        body: { max_cost: maxCost },
      },
    );
    const record = await ctx.svc.store.collections.runs.findOne({ _id: runId });
    assert.equal(record?.hold_usd, maxCost); // the cap is the hold: a true bound (D17)
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(run.status, 'failed');
    assert.match(run.error, /cost limit reached/);
    assert.match(run.error, /max_cost of \$0\.009/);
    assert.ok(run.total_cost <= maxCost, `${run.total_cost}`);
    assert.equal(run.total_cost, Math.round(maxCost * 1e9) / 1e9);
    assert.equal(await debit(runId), run.total_cost);
    const calls = ctx.fake.requestsWith('cap-a');
    assert.equal(calls.length, 4);
    assert.ok(
      calls.every((r) => r.answered && !r.aborted),
      'the calls in flight finished',
    );
    const items = await outputs(runId);
    assert.equal(items.filter((i) => i.status === 'completed').length, 4);
    assert.deepEqual(run.usage, {
      provider_calls: 4,
      input_tokens: 400,
      output_tokens: 200,
      by_node: {
        ask: {
          provider_calls: 4,
          input_tokens: 400,
          output_tokens: 200,
          cost: 4 * CALL,
          items_completed: 4,
          items_failed: 0,
        },
      },
    });
  });

  it('holds the exact worst case when it is below max_cost (a fee-only run)', async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet'));
    const runId = await startRun(
      ctx.svc.url,
      ctx.key,
      'greet',
      { name: 'Cap' },
      {
        body: { max_cost: 5 },
      },
    );
    const record = await ctx.svc.store.collections.runs.findOne({ _id: runId });
    assert.equal(record?.hold_usd, FEE); // exact: nothing in it is an estimate
    assert.equal(record?.max_cost, 5);
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(run.status, 'completed');
    assert.equal(run.total_cost, FEE);
  });

  it('max_cost on a big (stored) batch shrinks the last block to what fits', async () => {
    const maxCost = FEE + 25 * CALL; // 40 rows > 2 × concurrency: one stored block, cut to 25
    const runId = await startRun(
      ctx.svc.url,
      ctx.key,
      'rows',
      rows(40, (i) => `cap-b ${i}`),
      {
        body: { max_cost: maxCost },
      },
    );
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(run.status, 'failed');
    assert.match(run.error, /cost limit reached/);
    assert.equal(run.total_cost, Math.round(maxCost * 1e9) / 1e9);
    assert.equal(await debit(runId), run.total_cost);
    assert.equal(ctx.fake.requestsWith('cap-b').length, 25);
    const items = await outputs(runId);
    const done = items.filter((i) => i.status === 'completed');
    assert.equal(done.length, 25);
    assert.equal(done[0].parts[0].text, 'echo: cap-b 0');
    assert.equal(run.usage.provider_calls, 25);
    assert.equal(run.usage.by_node.ask.items_completed, 25);
    assert.equal(run.usage.by_node.ask.input_tokens, 2500);
  });

  it('a call dearer than its budget: the bill is capped at max_cost and the run stops', async () => {
    const maxCost = 0.011; // budgets 5 calls at $0.002; each costs $0.02
    const runId = await startRun(
      ctx.svc.url,
      ctx.key,
      'dear',
      rows(10, (i) => `dear ${i}`),
      {
        body: { max_cost: maxCost },
      },
    );
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(run.status, 'failed');
    assert.match(run.error, /cost limit reached/);
    assert.equal(run.total_cost, maxCost);
    assert.equal(await debit(runId), maxCost);
    const calls = ctx.fake.requestsWith('dear ').length;
    assert.equal(calls, 5);
    // usage shows what the calls really cost, beyond the bill
    assert.equal(run.usage.by_node.ask.cost, 5 * 0.02);
  });

  it('timeout_seconds reached mid-batch: failed within about a second, calls aborted, finished items readable and billed', async () => {
    // 200 rows in two stored blocks side by side: the first's 100 answer at once, the second's
    // calls hang until the deadline cancels them.
    const runId = await startRun(
      ctx.svc.url,
      ctx.key,
      'rows',
      rows(200, (i) => (i < 100 ? `late-ok ${i}` : `late-hang ${i} slow:60000`)),
      { body: { timeout_seconds: 3 } },
    );
    // Live: the finished rows' usage is visible while the run works.
    const live = await waitFor(
      async () => {
        const r = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
        return r.body.status === 'running' && r.body.usage.by_node.ask?.items_completed === 100
          ? r.body
          : undefined;
      },
      { what: 'live usage of the finished rows' },
    );
    assert.equal(live.usage.provider_calls, 100);
    const run = await waitFor(
      async () => {
        const r = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
        return r.body.status === 'failed' ? r.body : undefined;
      },
      { what: 'the run to fail', intervalMs: 50 },
    );
    const seenFailedMs = Date.now();
    const late = Date.parse(run.completed_at) - Date.parse(run.created_at) - 3000;
    const record = await ctx.svc.store.collections.runs.findOne({ _id: runId });
    console.log(
      `      deadline: ended ${late} ms after it; failed seen by GET ${seenFailedMs - Date.parse(run.created_at) - 3000} ms after it`,
    );
    assert.ok(late >= 0 && late < 2500, `ended ${late} ms after the deadline`);
    assert.equal(run.error, 'run timed out: the run reached its timeout_seconds of 3');
    const hung = ctx.fake.requestsWith('late-hang');
    assert.ok(hung.length > 0);
    await waitFor(async () => (hung.every((r) => r.aborted) ? true : undefined), {
      what: 'the provider to see every call in flight aborted',
    });
    const final = await waitForRun(ctx.svc.url, ctx.key, runId);
    const items = await outputs(runId);
    assert.equal(items.filter((i) => i.status === 'completed').length, 100);
    assert.equal(final.total_cost, Math.round((FEE + 100 * CALL) * 1e9) / 1e9);
    assert.equal(await debit(runId), final.total_cost);
    // D36: the calls the deadline aborted were made: they count, unbilled.
    assert.equal(final.usage.provider_calls, 100 + hung.length);
    assert.ok(record);
  });

  it('timeout_seconds on a small (inline) batch: the calls in flight are aborted, the finished items stay readable', async () => {
    const runId = await startRun(
      ctx.svc.url,
      ctx.key,
      'rows',
      rows(6, (i) => (i < 3 ? `small-ok ${i}` : `small-hang ${i} slow:60000`)),
      { body: { timeout_seconds: 1 } },
    );
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    const late = Date.parse(run.completed_at) - Date.parse(run.created_at) - 1000;
    console.log(`      deadline (inline rows): ended ${late} ms after it`);
    assert.equal(run.status, 'failed');
    assert.equal(run.error, 'run timed out: the run reached its timeout_seconds of 1');
    assert.ok(late >= 0 && late < 2500, `ended ${late} ms after the deadline`);
    const hung = ctx.fake.requestsWith('small-hang');
    assert.equal(hung.length, 3);
    await waitFor(async () => (hung.every((r) => r.aborted) ? true : undefined), {
      what: 'the provider to see every call in flight aborted',
    });
    const items = await outputs(runId);
    assert.deepEqual(
      items.filter((i) => i.status === 'completed').map((i) => i.parts[0].text),
      ['echo: small-ok 0', 'echo: small-ok 1', 'echo: small-ok 2'],
    );
    assert.equal(run.total_cost, Math.round((FEE + 3 * CALL) * 1e9) / 1e9);
    // D36: the three calls the deadline aborted were made: they count, unbilled.
    assert.equal(run.usage.provider_calls, 3 + hung.length);
  });

  it('token counts a provider reports that are not counts (negative, text, fractional) cost nothing and count 0', async () => {
    const account = await ctx.newAccount();
    const hostile = batchWorkflow('hostile-usage', [
      'tokens:-1000000000',
      'tokens:"many"',
      'tokens:1.5',
      'tokens:100',
    ]);
    await publish(ctx.svc.url, account.key, hostile);
    const run = await waitForRun(
      ctx.svc.url,
      account.key,
      await startRun(ctx.svc.url, account.key, 'hostile-usage', {}),
    );
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    // Only the last row's 100 + 100 tokens are counted and billed (before, the run cost -$29,999.997).
    assert.equal(run.usage.input_tokens, 100);
    assert.equal(run.usage.output_tokens, 100);
    assert.equal(run.usage.by_node.ask.cost, (100 * 10 + 100 * 20) / 1e6);
    assert.equal(await debit(run.id), run.total_cost);
    assert.ok(run.total_cost > 0, `${run.total_cost}`);
  });

  it('believes token counts only up to what one call can have used (9e15 reported: billed one call $27,000,000,000)', async () => {
    const account = await ctx.newAccount();
    await publish(ctx.svc.url, account.key, batchWorkflow('absurd-usage', ['tokens:9e15']));
    const run = await waitForRun(
      ctx.svc.url,
      account.key,
      await startRun(ctx.svc.url, account.key, 'absurd-usage', {}),
    );
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const sent = Buffer.byteLength(JSON.stringify(ctx.fake.requestsWith('tokens:9e15')[0].body));
    assert.equal(run.usage.input_tokens, sent + 1_000, 'the request’s bytes and 1,000');
    assert.equal(run.usage.output_tokens, OUTPUT_TOKENS_MAX);
    assert.ok(run.total_cost < 25, `${run.total_cost}`);
  });

  it('a refusal or an answer without choices fails its item, billed; an answer that is no object fails its item, unbilled; the run completes (D9)', async () => {
    const account = await ctx.newAccount();
    const rows = ['fine', 'answer:refused', 'answer:no-choices', 'answer:null'];
    await publish(ctx.svc.url, account.key, batchWorkflow('unusable-answers', rows));
    const run = await waitForRun(
      ctx.svc.url,
      account.key,
      await startRun(ctx.svc.url, account.key, 'unusable-answers', {}),
    );
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.deepEqual(
      run.output.answers.map((item: any) => item.error ?? item.status),
      [
        'completed',
        { message: 'openai: the model refused: I cannot help with that.', type: 'provider_error' },
        { message: 'openai: the answer has no message content', type: 'provider_error' },
        { message: 'openai: the answer is not a JSON object', type: 'provider_error' },
      ],
    );
    assert.equal(ctx.fake.requestsWith('answer:').length, 3, 'none was retried');
    assert.equal(run.usage.provider_calls, 4);
    assert.equal(run.usage.by_node.ask.cost, money(3 * CALL), 'each call made is billed');
  });

  it('usage on GET, the list and the webhook body, as the provider reported it; metrics per account', async () => {
    const account = await ctx.newAccount();
    const failing = batchWorkflow('usage-mix', ['u-ok 1', 'u-ok 2', 'u-refused status:400']);
    await publish(ctx.svc.url, account.key, failing);
    const runId = await startRun(
      ctx.svc.url,
      account.key,
      'usage-mix',
      {},
      {
        body: { webhook: `${receiver.url}/usage` },
      },
    );
    const run = await waitForRun(ctx.svc.url, account.key, runId);
    assert.equal(run.status, 'completed');
    const expected = {
      provider_calls: 3,
      input_tokens: 200,
      output_tokens: 100,
      by_node: {
        ask: {
          provider_calls: 3, // the refused call was made
          input_tokens: 200,
          output_tokens: 100,
          cost: 2 * CALL,
          items_completed: 2,
          items_failed: 1,
        },
      },
    };
    assert.deepEqual(run.usage, expected);
    const list = await call(ctx.svc.url, 'GET', '/api/v1/runs', { key: account.key });
    assert.deepEqual(list.body.data.find((r: { id: string }) => r.id === runId).usage, expected);
    const hook = await waitFor(async () =>
      receiver.hitsOn('/usage').find((h) => JSON.parse(h.body).id === runId),
    );
    assert.deepEqual(JSON.parse(hook.body).usage, expected);

    const metrics = await (await fetch(`${ctx.svc.url}/metrics`)).text();
    const labels = `{account="${account.accountId}"}`;
    assert.equal(sample(metrics, 'wrs_account_provider_calls_total', labels), 3);
    assert.equal(
      sample(
        metrics,
        'wrs_account_tokens_total',
        `{account="${account.accountId}",direction="input"}`,
      ),
      200,
    );
    assert.equal(sample(metrics, 'wrs_account_cost_usd_total', labels), run.total_cost);
    assert.equal(
      sample(
        metrics,
        'wrs_account_runs_ended_total',
        `{account="${account.accountId}",status="${run.status}"}`,
      ),
      1,
    );
  });
});
