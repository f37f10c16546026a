/**
 * D35 at a store outage: FerretDB killed (SIGKILL) and restarted on the same data directory and
 * port in the middle of a 10,000-row file run with 2 KB answers. Blocks whose page writes or reads
 * meet the outage fail and are retried; a retry reads the pages stored before and calls only the
 * rows they lack. The run completes with every row billed once (a row is billed from the page that
 * stores it), one debit of that amount, and the results file complete and in order.
 * The size only has to leave the run mid-way when the store dies (killed at 3,000 rows answered,
 * 7,000 to go); 20,000 file rows and their history are proven in big-run-files.test.ts.
 */
import assert from 'node:assert/strict';
import { startFerretDb } from '../../tools/stack';
import { newAccount } from '../support/accounts';
import { uploadFile, resultsFile } from '../support/files';
import { publish, rowsWorkflow, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { usePrivateStack } from './outage-support';

const ROWS = 10_000;
/** Rows answered when FerretDB is killed. */
const KILL_AT = 3_000;
const ANSWER = 2_000;
const START_FEE_USD = 0.001;
const ROW_USD = (100 * 1 + 50 * 2) / 1e6; // the fake: 100 tokens in, 50 out; gpt-test's price (outage-support)

describe('reliability: FerretDB killed in the middle of a 10,000-row file run (D35)', function () {
  this.timeout(600_000);
  const stack = usePrivateStack('big-run-ferretdb', { START_FEE_USD: String(START_FEE_USD) });

  it('completes with every row billed once and every item in the results file', async () => {
    const { svc, fake } = stack;
    const { accountId, key } = await newAccount(svc.store.collections, 1_000);
    await publish(
      svc.url,
      key,
      rowsWorkflow('big-db', `pad:${ANSWER} {{row}}`, { concurrency: 64 }),
    );
    const lines = Array.from({ length: ROWS }, (_, i) => JSON.stringify(`r${i}`)).join('\n');
    const fileId = await uploadFile(svc.url, key, 'rows.jsonl', `${lines}\n`);
    const runId = await startRun(svc.url, key, 'big-db', { rows: fileId });

    const answered = () => fake.requests.filter((r) => r.answered).length;
    await waitFor(async () => (answered() >= KILL_AT ? true : undefined), {
      timeoutMs: 300_000,
      intervalMs: 20,
      what: `${KILL_AT} rows answered`,
    });
    const m = stack.mongo!;
    const port = Number(new URL(m.uri).port);
    const answeredAtKill = answered();
    await m.kill();
    stack.mongo = undefined;
    // The worker's driver notices at its next heartbeat; the blocks' writes fail from the kill on.
    await new Promise<void>((resolve) =>
      svc.store.client.once('serverHeartbeatFailed', () => resolve()),
    );
    stack.mongo = await startFerretDb({ dataDir: m.dataDir, port });
    // The API reads the run again once its driver has found the database.
    await waitFor(
      async () =>
        (await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key })).status === 200
          ? true
          : undefined,
      { timeoutMs: 30_000, intervalMs: 200, what: 'the API to read the run again' },
    );

    const run = await waitForRun(svc.url, key, runId, 540_000);
    assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));
    const expected = Math.round((START_FEE_USD + ROWS * ROW_USD) * 1e9) / 1e9;
    assert.equal(run.total_cost, expected);
    const debits = await svc.store.collections.ledger
      .find({ account_id: accountId, kind: 'run' })
      .toArray();
    assert.deepEqual(
      debits.map((d) => [d.run_id, Math.round(-d.amount_usd * 1e9) / 1e9]),
      [[runId, expected]],
      'one debit, of every row once',
    );

    const items = await resultsFile(svc.url, key, runId, 'answers');
    assert.equal(items.length, ROWS);
    items.forEach((item, i) => {
      assert.equal(item.item_index, i);
      assert.equal(item.status, 'completed');
      assert.ok(
        item.parts[0].text.startsWith(`echo: pad:${ANSWER} r${i}`),
        item.parts[0].text.slice(0, 40),
      );
    });

    const calls = new Map<string, number>();
    for (const r of fake.requests) {
      const row = /pad:\d+ (r\d+)/.exec(r.prompt)?.[1];
      if (row) calls.set(row, (calls.get(row) ?? 0) + 1);
    }
    assert.equal(calls.size, ROWS, 'every row was called');
    console.log(
      `      killed with ${answeredAtKill} rows answered; ${[...calls.values()].filter((n) => n > 1).length} rows called more than once; ${fake.requests.length} calls in all`,
    );
  });
});
