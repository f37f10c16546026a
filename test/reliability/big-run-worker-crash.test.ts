/**
 * A worker killed with SIGKILL in the middle of a 10,000-row run (killed at 4,000 rows answered:
 * the size only has to leave most of the run to the second worker; big-runs.test.ts proves a run
 * past the old history limit). The run's chunks
 * heartbeat their finished rows every second, so the retried chunks on a second worker resume
 * from there: the run completes with every row in order, and every row is billed once however
 * often its call was made (a row answered after the chunk's last heartbeat is called again, once).
 */
import assert from 'node:assert/strict';
import { deriveId } from '../../store/ids';
import { publish, rowsWorkflow, waitForRun } from '../support/fixtures';
import { waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { startWorkerProcess, useWorkerProcesses } from '../support/worker-process';
import { useService } from '../support/use-service';

const ROWS = 10_000;
const START_FEE_USD = 0.001;
const PRICE = { input_per_mtok: 1, output_per_mtok: 2 };
const ROW_USD = (100 * PRICE.input_per_mtok + 50 * PRICE.output_per_mtok) / 1e6;

describe('reliability: worker killed in the middle of a 10,000-row run (D31)', function () {
  this.timeout(600_000);
  const workers = useWorkerProcesses();
  const ctx = useService({
    fakeOpenAI: true,
    worker: false,
    account: false,
    env: { START_FEE_USD: String(START_FEE_USD) },
  });

  it('completes in order with every row billed once after a kill -9 and a new worker', async () => {
    const { key } = await ctx.newAccount(100);
    await publish(
      ctx.svc.url,
      key,
      rowsWorkflow('big-crash', 'slow:10 row {{row}}', { concurrency: 64 }),
    );
    const workerEnv = {
      OPENAI_BASE_URL: ctx.fake.baseUrl,
      PRICES: JSON.stringify({ 'gpt-test': PRICE }),
    };
    workers.push(startWorkerProcess(ctx.svc.config, { env: workerEnv }));
    const rows = Array.from({ length: ROWS }, (_, i) => `r${i}`);
    const runId = await startRun(ctx.svc.url, key, 'big-crash', { rows });

    await waitFor(
      async () => (ctx.fake.requests.filter((r) => r.answered).length >= 4_000 ? true : undefined),
      { timeoutMs: 300_000, intervalMs: 20, what: '4,000 rows answered' },
    );
    const answeredAtKill = ctx.fake.requests.filter((r) => r.answered).length;
    await workers[0].kill();
    workers.push(startWorkerProcess(ctx.svc.config, { env: workerEnv }));

    const run = await waitForRun(ctx.svc.url, key, runId, 480_000);
    assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));
    const items = run.output.answers;
    assert.equal(items.length, ROWS);
    items.forEach((item: any, i: number) =>
      assert.equal(item.parts[0].text, `echo: slow:10 row r${i}`),
    );
    assert.equal(
      run.total_cost,
      Math.round((START_FEE_USD + ROWS * ROW_USD) * 1e9) / 1e9,
      'every row billed once',
    );
    const debit = await ctx.svc.store.collections.ledger.findOne({ _id: deriveId('led', runId) });
    assert.equal(debit?.amount_usd, -run.total_cost);

    const calls = new Map<string, number>();
    for (const r of ctx.fake.requests) calls.set(r.prompt, (calls.get(r.prompt) ?? 0) + 1);
    assert.equal(calls.size, ROWS, 'every row was called');
    const repeated = [...calls.values()].filter((n) => n > 1);
    assert.ok(
      repeated.every((n) => n === 2),
      'no row called more than twice',
    );
    // Rows answered before the kill and checkpointed are not called again: only the last second or so of work is.
    assert.ok(
      repeated.length < answeredAtKill / 2,
      `${repeated.length} of ${answeredAtKill} answered rows were called again`,
    );

    console.log(
      `      killed with ${answeredAtKill} rows answered; ${repeated.length} rows called twice; ${ctx.fake.requests.length} calls in all`,
    );
  });
});
