/**
 * The Temporal server is killed (SIGKILL) in the middle of a 6,000-row run (at 1,500 rows
 * answered: the size only has to leave the run mid-way while the server is away; big-runs.test.ts
 * proves a run past the old 11,200-row history limit), and comes back on the same SQLite file and port. The worker's chunks keep
 * calling the provider while the server is away, and cannot report: once it is back, Temporal
 * times out or retries what it lost, and the retried chunks resume from their last heartbeat
 * checkpoint. The run completes with every row in order, and every row is billed once however
 * often its call was made.
 */
import assert from 'node:assert/strict';
import { startTemporal } from '../../tools/stack';
import { deriveId } from '../../store/ids';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/definitions';
import { newAccount } from '../support/accounts';
import { publish, rowsWorkflow } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { usePrivateStack } from './outage-support';

const ROWS = 6_000;
/** Rows answered when Temporal is killed. */
const KILL_AT = 1_500;
const START_FEE_USD = 0.001;
/** gpt-test's price on the private stack (outage-support.ts); the fake reports 100 prompt and 50 completion tokens a call. */
const ROW_USD = (100 * 1 + 50 * 2) / 1e6;

describe('reliability: Temporal restart in the middle of a 6,000-row run (D31)', function () {
  this.timeout(600_000);
  const stack = usePrivateStack('big-run-temporal-restart', {
    START_FEE_USD: String(START_FEE_USD),
  });

  it('completes in order with every row billed once after Temporal is killed and restarted', async () => {
    const { svc, fake } = stack;
    const { key } = await newAccount(svc.store.collections, 100);
    await publish(
      svc.url,
      key,
      rowsWorkflow('big-restart', 'slow:50 row {{row}}', { concurrency: 64 }),
    );
    const rows = Array.from({ length: ROWS }, (_, i) => `r${i}`);
    const runId = await startRun(svc.url, key, 'big-restart', { rows });

    const answered = () => fake.requests.filter((r) => r.answered).length;
    await waitFor(async () => (answered() >= KILL_AT ? true : undefined), {
      timeoutMs: 300_000,
      intervalMs: 20,
      what: `${KILL_AT} rows answered`,
    });
    const t = stack.temporal!;
    const port = Number(t.address.split(':')[1]);
    await t.kill();
    stack.temporal = undefined;
    const answeredAtKill = answered();
    // Down for as long as it takes the API to notice: /readyz reports Temporal unavailable.
    await waitFor(
      async () =>
        (await call(svc.url, 'GET', '/readyz')).body?.temporal === 'unavailable' ? true : undefined,
      {
        timeoutMs: 20_000,
        what: 'the API to see Temporal down',
      },
    );
    stack.temporal = await startTemporal({
      dataDir: t.dataDir,
      port,
      headless: true,
      searchAttributes: SEARCH_ATTRIBUTE_TYPES,
    });

    // Reads answer 503 until the API has reconnected (within ~2 s of the restart), then the run's state.
    const run = await waitFor(
      async () => {
        const res = await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
        if (res.status === 503) return undefined;
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return ['completed', 'failed', 'cancelled'].includes(res.body.status)
          ? res.body
          : undefined;
      },
      { timeoutMs: 480_000, intervalMs: 200, what: 'the run to end' },
    );
    assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));
    const items = run.output.answers;
    assert.equal(items.length, ROWS);
    items.forEach((item: any, i: number) => {
      assert.equal(item.item_index, i);
      assert.equal(item.parts[0].text, `echo: slow:50 row r${i}`);
    });
    assert.equal(
      new Set(items.map((item: any) => item.id)).size,
      ROWS,
      'every item keeps its own id',
    );
    assert.equal(
      run.total_cost,
      Math.round((START_FEE_USD + ROWS * ROW_USD) * 1e9) / 1e9,
      'every row billed once',
    );
    // The live view says completed as the workflow ends; its record and its debit follow at once.
    const debit = await waitFor(
      async () =>
        (await svc.store.collections.ledger.findOne({ _id: deriveId('led', runId) })) ?? undefined,
      { what: 'the run’s debit' },
    );
    assert.equal(debit.amount_usd, -run.total_cost, 'one debit, of the run’s cost');

    const calls = new Map<string, number>();
    for (const r of fake.requests) calls.set(r.prompt, (calls.get(r.prompt) ?? 0) + 1);
    assert.equal(calls.size, ROWS, 'every row was called');
    console.log(
      `      killed with ${answeredAtKill} rows answered; ${[...calls.values()].filter((n) => n > 1).length} rows called more than once; ${fake.requests.length} calls in all`,
    );
  });
});
