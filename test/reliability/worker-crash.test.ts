/**
 * A worker killed with SIGKILL while 100 runs are in flight loses nothing and repeats
 * nothing. The worker is the production entry in a child process; every run is a batch of
 * three slow provider calls, so at the kill some runs are done, many have calls in flight and
 * some have calls answered whose results may or may not have reached Temporal. A second worker
 * process takes over: Temporal retries the dead worker's activity attempts once their heartbeat
 * timeout (10 s, workflows/run-workflow.ts) expires and replays the workflows.
 *
 * Asserted for every run: it completes; its output is exactly the three items its inputs dictate,
 * in order, with distinct ids that match its event log's added/done events one to one; the log is
 * numbered without gap or repeat and ends with one terminal event; its cost counts each node once;
 * it has exactly one debit (led_<run ulid>, store/ledger.ts) and the balance is the opening credit
 * minus the sum of the runs' `total_cost`.
 */
import assert from 'node:assert/strict';
import { deriveId } from '../../store/ids';
import { accountBalance } from '../../store/ledger';
import { newAccount } from '../support/accounts';
import { publish, rowsWorkflow } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { mapConcurrent } from '../support/pool';
import {
  startWorkerProcess,
  useWorkerProcesses,
  type WorkerProcess,
} from '../support/worker-process';
import { storedLog } from '../support/runs';
import { useService } from '../support/use-service';

const RUNS = 100;
/** Per row of a run: the fake's delay. Spread so the kill finds calls done, answered and in flight. */
const DELAYS_MS = [300, 1_500, 3_000];
const CREDIT_USD = 10;
const START_FEE_USD = 0.001;
/** gpt-test's price; the fake reports 100 prompt and 50 completion tokens per call: 0.0006 USD a call. */
const PRICE = { input_per_mtok: 2, output_per_mtok: 8 };
const CALL_USD = (100 * PRICE.input_per_mtok + 50 * PRICE.output_per_mtok) / 1e6;
const RUN_USD = START_FEE_USD + DELAYS_MS.length * CALL_USD;

/** The rows of run `i`: each names its run and row, so every provider call and answer is traceable. */
const rowsOf = (i: number) => DELAYS_MS.map((ms, k) => `slow:${ms} run-${i} row-${k}`);

/** Adds what a worker process wrote to stderr to a failure, which is where its reason shows. */
const withLog =
  (worker: WorkerProcess) =>
  (err: Error): never => {
    throw new Error(`${err.message}\nworker stderr:\n${worker.stderr()}`);
  };

describe('reliability: worker killed with 100 runs in flight', function () {
  this.timeout(240_000);
  const workers = useWorkerProcesses();
  // The API in this process; the worker is a child process (below) so it can be SIGKILLed.
  const ctx = useService({
    fakeOpenAI: true,
    worker: false,
    account: false,
    env: {
      RATE_LIMIT_STARTS_PER_MINUTE: '10000',
      RATE_LIMIT_REQUESTS_PER_MINUTE: '100000',
      START_FEE_USD: String(START_FEE_USD),
    },
  });

  it('completes every run with exactly its items and one debit after a kill -9 and a new worker', async () => {
    const c = ctx.svc.store.collections;
    const { accountId, key } = await newAccount(c, CREDIT_USD);
    await publish(ctx.svc.url, key, rowsWorkflow('crash')); // three output items per run
    const workerEnv = {
      OPENAI_BASE_URL: ctx.fake.baseUrl,
      PRICES: JSON.stringify({ 'gpt-test': PRICE }),
      // The load governor off: on a loaded machine it holds the calls in flight under the 30 the
      // kill waits for (activities/load-governor.ts), and the moment passes unseen.
      WORKER_CALL_LAG_TARGET_MS: '0',
    };
    const started = Date.now();
    workers.push(startWorkerProcess(ctx.svc.config, { env: workerEnv }));

    const runIds = await mapConcurrent(
      Array.from({ length: RUNS }, (_, i) => i),
      16,
      async (i) => {
        const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
          key,
          body: { workflowId: 'crash', inputs: { rows: rowsOf(i) } },
        });
        assert.equal(res.status, 202, JSON.stringify(res.body));
        return res.body.run_id as string;
      },
    );
    const startedAllMs = Date.now() - started;

    // Mid-way: some runs ended, many calls answered, and the fake holds many calls the worker waits on.
    const inFlight = () => ctx.fake.requests.filter((r) => !r.answered && !r.aborted);
    await waitFor(
      async () => {
        if (inFlight().length < 30 || ctx.fake.requests.filter((r) => r.answered).length < 60)
          return undefined;
        return (await c.runs.countDocuments({ account_id: accountId, finalized: true })) >= 5
          ? true
          : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 20, what: '5 runs ended, 60 calls answered, 30 in flight' },
    ).catch((err: Error) =>
      withLog(workers[0])(
        new Error(
          `${err.message} (${inFlight().length} in flight, ${ctx.fake.requests.length} calls made)`,
        ),
      ),
    );
    const atKill = {
      callsInFlight: inFlight().length,
      callsAnswered: ctx.fake.requests.filter((r) => r.answered).length,
      runsCalled: new Set(ctx.fake.requests.map((r) => /run-\d+/.exec(r.prompt)![0])).size,
    };
    await workers[0].kill();
    const finalizedAtKill = await c.runs.countDocuments({ account_id: accountId, finalized: true });
    assert.ok(finalizedAtKill < RUNS, 'the kill came before every run had ended');
    const killedAtMs = Date.now() - started;

    workers.push(startWorkerProcess(ctx.svc.config, { env: workerEnv }));
    await waitFor(
      async () =>
        (await c.runs.countDocuments({ account_id: accountId, finalized: true })) === RUNS
          ? true
          : undefined,
      {
        timeoutMs: 150_000,
        intervalMs: 250,
        what: `all ${RUNS} runs to be finalized`,
      },
    ).catch(withLog(workers[1]));
    const doneMs = Date.now() - started;

    // Every run through the API, and its persisted event log from the store.
    const itemIds = new Set<string>();
    let events = 0;
    const runs = await mapConcurrent(runIds, 16, async (runId, i) => {
      const res = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const run = res.body;
      assert.equal(run.status, 'completed', `${runId}: ${JSON.stringify(run)}`);
      const items = run.output.answers as Array<{
        id: string;
        item_index: number;
        status: string;
        parts: unknown;
      }>;
      assert.deepEqual(
        items.map(({ item_index, status, parts }) => ({ item_index, status, parts })),
        rowsOf(i).map((row, k) => ({
          item_index: k,
          status: 'completed',
          parts: [{ type: 'text', text: `echo: ${row}` }],
        })),
        `${runId} (run-${i}) has exactly its own three answers, in order`,
      );
      for (const item of items) {
        assert.ok(!itemIds.has(item.id), `item id ${item.id} appears twice`);
        itemIds.add(item.id);
      }
      assert.ok(
        Math.abs(run.total_cost - RUN_USD) < 1e-9,
        `${runId} cost ${run.total_cost}, expected ${RUN_USD}: each call counted once`,
      );

      const log = await storedLog(c, runId);
      events += log.length;
      assert.deepEqual(
        log.map((e) => e.sequence_number),
        log.map((_, n) => n),
        `${runId}: the log is numbered 0..n-1`,
      );
      assert.equal(log[0].type, 'response.created');
      assert.deepEqual(
        log.filter((e) => !e.type.startsWith('response.output_item')).map((e) => e.type),
        ['response.created', 'response.completed'],
      );
      assert.equal(log.at(-1)!.type, 'response.completed');
      const ids = (type: string) =>
        log.filter((e) => e.type === type).map((e) => (e as { item: { id: string } }).item.id);
      const outputIds = items.map((item) => item.id);
      assert.deepEqual(
        [...ids('response.output_item.added')].sort(),
        [...outputIds].sort(),
        `${runId}: one added event per item`,
      );
      assert.deepEqual(
        [...ids('response.output_item.done')].sort(),
        [...outputIds].sort(),
        `${runId}: one done event per item`,
      );
      return run;
    });
    assert.equal(itemIds.size, RUNS * DELAYS_MS.length);

    // Money: one debit per run, of its cost; the balance is the opening credit minus the sum.
    const debits = await c.ledger.find({ account_id: accountId, kind: 'run' }).toArray();
    assert.equal(debits.length, RUNS, 'one debit per run');
    const byId = new Map(debits.map((d) => [d._id, d]));
    for (const run of runs) {
      const debit = byId.get(deriveId('led', run.id));
      assert.ok(debit, `${run.id} has its debit`);
      assert.equal(debit.run_id, run.id);
      assert.equal(debit.amount_usd, -run.total_cost);
    }
    const spent = runs.reduce((sum, run) => sum + run.total_cost, 0);
    assert.ok(
      Math.abs((await accountBalance(c, accountId)) - (CREDIT_USD - spent)) < 1e-9,
      'balance = credit - sum of total_cost',
    );

    // The provider's view: every row was answered; a call cut by the kill was made again, once.
    const callsPerRow = new Map<string, number>();
    for (const r of ctx.fake.requests)
      callsPerRow.set(r.prompt, (callsPerRow.get(r.prompt) ?? 0) + 1);
    assert.equal(callsPerRow.size, RUNS * DELAYS_MS.length);
    const repeated = [...callsPerRow.values()].filter((n) => n > 1);
    assert.ok(
      repeated.every((n) => n === 2),
      `no row called more than twice: ${JSON.stringify(repeated)}`,
    );
    const aborted = ctx.fake.requests.filter((r) => r.aborted).length;

    console.log(
      `      ${RUNS} runs started in ${startedAllMs} ms; killed at ${killedAtMs} ms with ${atKill.callsInFlight} calls in flight, ` +
        `${atKill.callsAnswered} answered, ${atKill.runsCalled} runs called, ${finalizedAtKill} finalized; all finalized at ${doneMs} ms. ` +
        `${events} events, ${itemIds.size} items, 0 duplicates; provider calls ${ctx.fake.requests.length} (${aborted} cut by the kill, ` +
        `${repeated.length} rows called twice); ${debits.length} debits, ${spent.toFixed(6)} USD`,
    );
  });
});
