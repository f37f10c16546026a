/**
 * Big runs (D31) end to end at a size the suite can afford: 12,000 rows in one run, past the old
 * limit of ~11,200 (Temporal's history count); its history stays under 2,000 events. The suite's
 * 20,000-row run is the file-rows test of big-run-files.test.ts, which also bounds the history's
 * bytes. The 100,000-row case runs in the bench. (A list over
 * the 1,000,000-row limit (D35) no longer fits a request body; a file's is refused as it is read,
 * test/lib/files/rows.unit.test.ts.)
 */
import assert from 'node:assert/strict';
import { publish, rowsWorkflow, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { openSse } from '../support/sse';
import { temporalClient } from '../support/service';
import { bookedDebit, startRun } from '../support/runs';
import { useService } from '../support/use-service';

const ROWS = 12_000;
const PRICE = { input_per_mtok: 1, output_per_mtok: 2 }; // the fake answers 100 tokens in, 50 out
const ROW_COST = (100 * PRICE.input_per_mtok + 50 * PRICE.output_per_mtok) / 1e6;
const START_FEE = 0.001;

const rowValues = (n: number) => Array.from({ length: n }, (_, i) => `r${i}`);

describe('big runs: 12,000 rows in one run (D31)', function () {
  this.timeout(600_000);
  const ctx = useService({
    fakeOpenAI: true,
    credit: 1_000,
    env: { PRICES: JSON.stringify({ 'gpt-test': PRICE }), START_FEE_USD: String(START_FEE) },
  });

  before(async () => {
    await publish(
      ctx.svc.url,
      ctx.key,
      rowsWorkflow('rows-fast', 'row {{row}}', { concurrency: 64 }),
    );
    await publish(
      ctx.svc.url,
      ctx.key,
      rowsWorkflow('rows-slow', 'slow:20 row {{row}}', { concurrency: 64 }),
    );
  });

  const start = (slug: string, rows: unknown[]) => startRun(ctx.svc.url, ctx.key, slug, { rows });

  it('completes in order, each row billed once, its history far under the limit; items page and the stream resumes anywhere', async () => {
    const runId = await start('rows-fast', rowValues(ROWS));
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 540_000);
    assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));
    const items = run.output.answers;
    assert.equal(items.length, ROWS);
    items.forEach((item: any, i: number) => {
      assert.equal(item.item_index, i);
      assert.equal(item.parts[0].text, `echo: row r${i}`);
    });
    assert.equal(new Set(items.map((item: any) => item.id)).size, ROWS, 'item ids are unique');
    assert.equal(
      run.total_cost,
      Math.round((START_FEE + ROWS * ROW_COST) * 1e9) / 1e9,
      'every row billed once',
    );
    const debit = await bookedDebit(ctx.svc.store.collections, runId);
    assert.equal(debit.amount_usd, -run.total_cost);

    const { historyLength, historySize } = await temporalClient(ctx.svc)
      .workflow.getHandle(runId)
      .describe();
    assert.ok(historyLength < 2_000, `history of ${historyLength} events`);
    // D35: the request's rows are in the start arguments and, packed (domain/items.ts), in the
    // inputs of their blocks: about twice their size (as whole items, ~8 times).
    const rowsBytes = JSON.stringify(rowValues(ROWS)).length;
    assert.ok(
      historySize !== undefined && historySize < 4 * rowsBytes,
      `history of ${historySize} bytes, rows ${rowsBytes}`,
    );

    // D31 pages: the first, one after a cursor in the middle, and the errors.
    const first = await call(
      ctx.svc.url,
      'GET',
      `/api/v1/runs/${runId}/outputs/answers?limit=1000`,
      { key: ctx.key },
    );
    assert.equal(first.status, 200);
    assert.equal(first.body.data.length, 1000);
    assert.equal(first.body.has_more, true);
    assert.equal(first.body.last_id, items[999].id);
    const middle = await call(
      ctx.svc.url,
      'GET',
      `/api/v1/runs/${runId}/outputs/answers?limit=3&starting_after=${items[10_344].id}`,
      { key: ctx.key },
    );
    assert.deepEqual(
      middle.body.data.map((item: any) => item.item_index),
      [10_345, 10_346, 10_347],
    );
    const last = await call(
      ctx.svc.url,
      'GET',
      `/api/v1/runs/${runId}/outputs/answers?starting_after=${items[ROWS - 2].id}`,
      { key: ctx.key },
    );
    assert.deepEqual([last.body.data.length, last.body.has_more], [1, false]);
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/nothing`, { key: ctx.key }))
        .status,
      404,
    );
    const stranger = await call(
      ctx.svc.url,
      'GET',
      `/api/v1/runs/${runId}/outputs/answers?starting_after=item_01JAAAAAAAAAAAAAAAAAAAAAAA`,
      { key: ctx.key },
    );
    assert.equal(stranger.status, 400);
    assert.equal(stranger.body.error.param, 'starting_after');

    // The stream from the record, resumed deep inside its 24,001 events.
    const stream = await openSse(
      `${ctx.svc.url}/api/v1/runs/${runId}/stream?starting_after=20000`,
      { key: ctx.key },
    );
    await stream.closed;
    const seen = stream.frames
      .filter((frame) => frame.event && frame.event.type !== 'response.resumed')
      .map((frame) => frame.event);
    assert.equal(seen.length, 2 * ROWS + 1 - 20_000);
    seen.forEach((event, i) => assert.equal(event.sequence_number, 20_001 + i));
    assert.equal(seen.at(-1).type, 'response.completed');
    assert.equal(stream.frames.at(-1)?.data, '[DONE]');
  });

  it('cancel stops a big run and bills only the rows that finished', async () => {
    const before = ctx.fake.requests.length;
    const runId = await start('rows-slow', rowValues(ROWS));
    await waitFor(async () => (ctx.fake.requests.length - before > 1_000 ? true : undefined), {
      timeoutMs: 240_000,
      what: '1,000 calls',
    });
    const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
      key: ctx.key,
    });
    assert.equal(cancel.status, 202);
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 60_000);
    assert.equal(run.status, 'cancelled');
    const calls = ctx.fake.requests.slice(before);
    assert.ok(calls.length < ROWS, `the run stopped calling (${calls.length} calls)`);
    const answered = calls.filter((r) => r.answered && !r.aborted).length;
    const billedRows = Math.round((run.total_cost - START_FEE) / ROW_COST);
    assert.ok(
      billedRows <= answered && billedRows >= answered - 64,
      `billed ${billedRows} rows, ${answered} answered`,
    );
  });

  it('a run whose workflow is terminated from outside ends failed, billed for what ran', async () => {
    const before = ctx.fake.requests.length;
    const runId = await start('rows-slow', rowValues(ROWS));
    await waitFor(async () => (ctx.fake.requests.length - before > 500 ? true : undefined), {
      timeoutMs: 240_000,
      what: '500 calls',
    });
    await temporalClient(ctx.svc).workflow.getHandle(runId).terminate('an operator stopped it');
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 60_000);
    assert.equal(run.status, 'failed');
    assert.match(run.error, /terminated/);
    assert.ok(run.total_cost >= START_FEE, `cost ${run.total_cost}`);
    const debit = await bookedDebit(ctx.svc.store.collections, runId);
    assert.equal(debit.amount_usd, -run.total_cost);
    const stream = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream?starting_after=0`, {
      key: ctx.key,
    });
    await stream.closed;
    const events = stream.frames.filter((frame) => frame.event).map((frame) => frame.event);
    assert.equal(events.at(-1).type, 'response.failed');
  });
});
