/**
 * 1,000 runs started as fast as the service takes them (16 starters at a time, the rate
 * limits raised for the test) all end, none is lost or doubled, and the money adds up. Each run is
 * one llm call through the fake with a price, so its cost is the start fee plus the call (both
 * must be counted once for the ledger to balance).
 *
 * Asserted: the list endpoint (D23, paged) and the store both hold exactly the 1,000 started
 * runs, every one terminal — completed with its own answer; the ledger has one debit per run and
 * their sum is minus the sum of the runs' `total_cost`; the balance is the opening credit minus
 * that sum. The start rate, the retries and the time until the last run ended are printed.
 *
 * Found here: on the development stack a start now and then answers 500 under this load (about one
 * run of three at 8 or 16 starters, 17 of 1,000 starts at 24). FerretDB keeps each database in one
 * SQLite file with one writer; SQLite's busy handler is a sleep-and-retry poll (1 to 100 ms, no
 * queue), so under a steady stream of writes an unlucky writer can wait out FerretDB's 10 s
 * `busy_timeout` and fail with `database is locked (5) (SQLITE_BUSY)` (MongoServerError code 1).
 * The API mapped that to 500, though nothing was written; it now answers 503 with Retry-After
 * (api/middleware/error-handler.ts `isDatabaseBusy`), so a 500 fails this test. The starters send
 * an Idempotency-Key anyway and retry 503/429 under it, which the test proves safe: still exactly
 * 1,000 runs and 1,000 debits.
 */
import assert from 'node:assert/strict';
import { deriveId } from '../../store/ids';
import { accountBalance } from '../../store/ledger';
import { newAccount } from '../support/accounts';
import { llmWorkflow, publish } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { mapConcurrent } from '../support/pool';
import { useService } from '../support/use-service';

const RUNS = 1_000;
const STARTERS = 16;
const CREDIT_USD = 10;
const START_FEE_USD = 0.001;
/** gpt-test's price; the fake reports 100 prompt and 50 completion tokens per call: 0.0006 USD a call. */
const PRICE = { input_per_mtok: 2, output_per_mtok: 8 };
const RUN_USD = START_FEE_USD + (100 * PRICE.input_per_mtok + 50 * PRICE.output_per_mtok) / 1e6;

describe('reliability: 1,000 runs under load', function () {
  this.timeout(400_000);
  const ctx = useService({
    fakeOpenAI: true,
    account: false,
    env: {
      PRICES: JSON.stringify({ 'gpt-test': PRICE }),
      START_FEE_USD: String(START_FEE_USD),
      // D16 defaults (60 starts, 1,200 requests a minute) would make this a rate-limit test.
      RATE_LIMIT_STARTS_PER_MINUTE: '100000',
      RATE_LIMIT_REQUESTS_PER_MINUTE: '100000',
    },
  });

  it('ends all 1,000 runs, loses none, and debits exactly the sum of their costs', async () => {
    const c = ctx.svc.store.collections;
    const { accountId, key } = await newAccount(c, CREDIT_USD);
    await publish(ctx.svc.url, key, llmWorkflow('load'));

    const started = Date.now();
    const retried = { 503: 0, 429: 0 };
    const runIds = await mapConcurrent(
      Array.from({ length: RUNS }, (_, i) => i),
      STARTERS,
      async (i) => {
        // A careful client: every start carries an Idempotency-Key (D18), so any failure can be retried.
        const headers = { 'Idempotency-Key': `load-${i}` };
        for (;;) {
          const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
            key,
            headers,
            body: { workflowId: 'load', inputs: { topic: `load-${i}` } },
          });
          if (res.status === 202) return res.body.run_id as string;
          // 503 and 429 say when to come back (docs/api.md, docs/outages.md); anything else is a failure.
          assert.ok(
            res.status === 503 || res.status === 429,
            `start ${i}: ${res.status} ${JSON.stringify(res.body)}`,
          );
          retried[res.status]++;
          await new Promise((r) =>
            setTimeout(r, Number(res.headers.get('retry-after') ?? '1') * 1000),
          );
        }
      },
    );
    const startMs = Date.now() - started;
    assert.equal(new Set(runIds).size, RUNS, 'every start made its own run');

    await waitFor(
      async () =>
        (await c.runs.countDocuments({ account_id: accountId, finalized: true })) === RUNS
          ? true
          : undefined,
      {
        timeoutMs: 300_000,
        intervalMs: 2_000, // a count scans every run on FerretDB: poll gently
        what: `all ${RUNS} runs to end`,
      },
    );
    const endMs = Date.now() - started;

    // The list endpoint, paged, as a client would see it.
    const listed: any[] = [];
    let cursor: string | undefined;
    for (;;) {
      const res = await call(
        ctx.svc.url,
        'GET',
        `/api/v1/runs?limit=100${cursor ? `&starting_after=${cursor}` : ''}`,
        { key },
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      listed.push(...res.body.data);
      if (!res.body.has_more) break;
      cursor = res.body.last_id;
    }
    assert.equal(listed.length, RUNS, 'the list shows every run once');
    assert.deepEqual(new Set(listed.map((r) => r.id)), new Set(runIds));
    assert.equal(
      await c.runs.countDocuments({ account_id: accountId }),
      RUNS,
      'the store holds every run once',
    );

    const byId = new Map(runIds.map((id, i) => [id, i]));
    for (const run of listed) {
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.equal(
        run.output.answer[0].parts[0].text,
        `echo: load-${byId.get(run.id)}`,
        `${run.id} has its own answer`,
      );
      assert.ok(Math.abs(run.total_cost - RUN_USD) < 1e-9, `${run.id} cost ${run.total_cost}`);
    }

    const debits = await c.ledger.find({ account_id: accountId, kind: 'run' }).toArray();
    assert.equal(debits.length, RUNS, 'one debit per run');
    const costs = new Map(listed.map((run) => [deriveId('led', run.id), run.total_cost as number]));
    for (const d of debits)
      assert.equal(d.amount_usd, -costs.get(d._id)!, `${d._id} debits its run's cost`);
    const spent = listed.reduce((sum, run) => sum + run.total_cost, 0);
    const debited = debits.reduce((sum, d) => sum + d.amount_usd, 0);
    assert.ok(Math.abs(debited + spent) < 1e-9, `debits ${debited} vs costs ${spent}`);
    assert.ok(
      Math.abs((await accountBalance(c, accountId)) - (CREDIT_USD - spent)) < 1e-9,
      'balance = credit - sum of total_cost',
    );

    console.log(
      `      ${RUNS} runs started in ${startMs} ms (${((RUNS * 1000) / startMs).toFixed(1)} starts/s, ${STARTERS} starters, retried: ${retried[503]} × 503, ${retried[429]} × 429); ` +
        `all ended ${endMs} ms after the first start (${((RUNS * 1000) / endMs).toFixed(1)} runs/s); ` +
        `${ctx.fake.requests.length} provider calls; ${debits.length} debits = ${spent.toFixed(6)} USD`,
    );
  });
});
