/**
 * D35 end to end: rows from an uploaded file (JSON Lines, CSV), answers of a real size (2 KB),
 * no rows or answers in Temporal's history (its size read from Temporal), the results file as
 * JSON Lines, and the items a cancelled run finished readable and billed.
 *
 * Sizes: the file-rows test is the suite's one run of 20,000 file rows with 2 KB answers, and it
 * proves the history bound at that size. The body-list test needs no such size: it measures the
 * history's bytes per row at BODY_ROWS and holds them under what 20,000 rows may take (an answer
 * leaking into the history would be 2 KB a row, four times that budget). The cancelled run keeps
 * 20,000 rows so that plenty are left when the cancel lands; it costs only the calls made before.
 */
import assert from 'node:assert/strict';
import type { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { publish, waitForRun } from '../support/fixtures';
import { uploadFile } from '../support/files';
import { expectError } from '../support/api-assert';
import { call, waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { temporalClient } from '../support/service';
import { useService } from '../support/use-service';

const ROWS = 20_000;
const ANSWER = 2_000;
const PRICE = { input_per_mtok: 1, output_per_mtok: 2 }; // the fake answers 100 tokens in, 50 out
const ROW_COST = (100 * PRICE.input_per_mtok + 50 * PRICE.output_per_mtok) / 1e6;
const START_FEE = 0.001;
const HISTORY_BYTES = 10 * 1024 * 1024;
/** The body-list run's size: its history bytes per row are held to the budget of 20,000 rows. */
const BODY_ROWS = 5_000;

/** A prompt of ~200 bytes, as a spreadsheet row would be. */
const prompt = (i: number) => `row ${i}: ${'p'.repeat(190)}`;

function fileWorkflow(slug: string, template: string, inputType: 'file' | 'json' = 'file') {
  return {
    slug,
    concurrency: 64,
    nodes: [
      { id: 'rows', type: 'user_input', label: 'Rows', input_type: inputType },
      { id: 'split', type: 'batch' },
      { id: 'ask', type: 'llm', model: 'gpt-test', prompt: template },
      { id: 'out', type: 'user_result', label: 'Answers' },
    ],
    edges: [
      { from: 'rows', to: 'split', port: 'rows' },
      { from: 'split', to: 'ask', port: 'row' },
      { from: 'ask', to: 'out' },
    ],
  };
}

describe('big runs from files, no items in history (D35)', function () {
  this.timeout(600_000);
  const ctx = useService({
    fakeOpenAI: true,
    credit: 1_000,
    env: { PRICES: JSON.stringify({ 'gpt-test': PRICE }), START_FEE_USD: String(START_FEE) },
  });

  const upload = (name: string, text: string, key = ctx.key) =>
    uploadFile(ctx.svc.url, key, name, text);

  const history = async (runId: string) => {
    const { historyLength, historySize, startTime, closeTime } = await temporalClient(ctx.svc)
      .workflow.getHandle(runId)
      .describe();
    const seconds = closeTime ? (closeTime.getTime() - startTime.getTime()) / 1000 : NaN;
    return { events: historyLength, bytes: historySize ?? 0, seconds };
  };

  /** The results file; a 503 (the run ended a moment ago and its record is being written) is retried as its Retry-After says. */
  const ndjson = async (runId: string, key: string) => {
    const res = await waitFor(
      async () => {
        const answer = await fetch(`${ctx.svc.url}/api/v1/runs/${runId}/outputs/${key}`, {
          headers: { authorization: `Bearer ${ctx.key}`, accept: 'application/x-ndjson' },
        });
        if (answer.status !== 503) return answer;
        assert.equal(answer.headers.get('retry-after'), '2');
        await answer.body?.cancel();
        return undefined;
      },
      { timeoutMs: 30_000, what: 'the results file' },
    );
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/x-ndjson/);
    const text = await res.text();
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
  };

  before(async () => {
    await publish(ctx.svc.url, ctx.key, fileWorkflow('file-rows', `pad:${ANSWER} {{row}}`));
    await publish(ctx.svc.url, ctx.key, fileWorkflow('json-file-rows', '{{row}}', 'json'));
    await publish(ctx.svc.url, ctx.key, fileWorkflow('slow-file-rows', 'slow:20 {{row}}'));
  });

  it('20,000 JSON Lines rows with 2 KB answers: completed, billed once each, history far under 10 MB, every item readable', async () => {
    const lines = Array.from({ length: ROWS }, (_, i) => JSON.stringify(prompt(i))).join('\n');
    const fileId = await upload('rows.jsonl', `${lines}\n`);
    // API, worker and test share this process: its peak RSS bounds each of them.
    let peakRss = 0;
    const sampler = setInterval(
      () => (peakRss = Math.max(peakRss, process.memoryUsage().rss)),
      250,
    );
    const started = Date.now();
    const runId = await startRun(ctx.svc.url, ctx.key, 'file-rows', { rows: fileId });
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 540_000);
    const seconds = (Date.now() - started) / 1000;
    clearInterval(sampler);
    assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));
    assert.equal(run.output.answers.length, ROWS);
    assert.equal(run.total_cost, Math.round((START_FEE + ROWS * ROW_COST) * 1e9) / 1e9);
    const h = await history(runId);
    console.log(
      `      ${ROWS} file rows, ${ANSWER} B answers: workflow ${h.seconds} s (${seconds.toFixed(1)} s to the answer), history ${h.events} events, ${h.bytes} bytes, peak RSS of the test process (API + worker + test) ${Math.round(peakRss / 2 ** 20)} MB`,
    );
    assert.ok(h.bytes > 0 && h.bytes < HISTORY_BYTES, `history of ${h.bytes} bytes`);
    assert.ok(h.events < 20_000, `history of ${h.events} events`);

    // The results file: every item, in order.
    const items = await ndjson(runId, 'answers');
    assert.equal(items.length, ROWS);
    items.forEach((item, i) => {
      assert.equal(item.item_index, i);
      assert.equal(item.status, 'completed');
      assert.ok(
        item.parts[0].text.startsWith(`echo: pad:${ANSWER} row ${i}: p`),
        item.parts[0].text.slice(0, 40),
      );
      assert.equal(item.parts[0].text.length, ANSWER);
    });
    assert.equal(items[0].id, run.output.answers[0].id);
    assert.equal(items[ROWS - 1].id, run.output.answers[ROWS - 1].id);

    // A page deep inside reads only its blocks and agrees with the file.
    const page = await call(
      ctx.svc.url,
      'GET',
      `/api/v1/runs/${runId}/outputs/answers?limit=3&starting_after=${items[17_344].id}`,
      { key: ctx.key },
    );
    assert.equal(page.status, 200);
    assert.deepEqual(
      page.body.data.map((item: any) => item.id),
      [items[17_345].id, items[17_346].id, items[17_347].id],
    );
    const stranger = await call(
      ctx.svc.url,
      'GET',
      `/api/v1/runs/${runId}/outputs/answers?starting_after=item_01JAAAAAAAAAAAAAAAAAAAAAAA`,
      { key: ctx.key },
    );
    assert.equal(stranger.status, 400);
    assert.equal(stranger.body.error.param, 'starting_after');
  });

  it('a JSON Lines body list with 2 KB answers: its history per row stays far under what 20,000 rows may take', async () => {
    await publish(ctx.svc.url, ctx.key, {
      ...fileWorkflow('body-rows', `pad:${ANSWER} {{row}}`, 'json'),
    });
    const rows = Array.from({ length: BODY_ROWS }, (_, i) => `r${i}`);
    const runId = await startRun(ctx.svc.url, ctx.key, 'body-rows', { rows });
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 540_000);
    assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));
    assert.equal(run.output.answers.length, BODY_ROWS);
    const h = await history(runId);
    const perRow = h.bytes / BODY_ROWS; // the whole history, fixed part included: an overestimate of the per-row part
    console.log(
      `      ${BODY_ROWS} body rows, ${ANSWER} B answers: workflow ${h.seconds} s, history ${h.events} events, ${h.bytes} bytes (${perRow.toFixed(0)} B a row)`,
    );
    assert.ok(
      h.bytes > 0 && perRow * 20_000 < HISTORY_BYTES,
      `history of ${h.bytes} bytes: ${perRow.toFixed(0)} B a row`,
    );
    assert.match(run.output.answers[4_321].parts[0].text, /^echo: pad:\d+ r4321x/);
  });

  it('a chain pipelines: rows go on to the second llm while the first still works (D35)', async () => {
    await publish(ctx.svc.url, ctx.key, {
      slug: 'chain',
      concurrency: 8,
      nodes: [
        { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'json' },
        { id: 'split', type: 'batch' },
        { id: 'first', type: 'llm', model: 'gpt-test', prompt: 'A {{row}}' },
        { id: 'second', type: 'llm', model: 'gpt-test', prompt: 'B {{row}}' },
        { id: 'out', type: 'user_result', label: 'Answers' },
      ],
      edges: [
        { from: 'rows', to: 'split', port: 'rows' },
        { from: 'split', to: 'first', port: 'row' },
        { from: 'first', to: 'second', port: 'row' },
        { from: 'second', to: 'out' },
      ],
    });
    const before = ctx.fake.requests.length;
    const rows = Array.from({ length: 2_000 }, (_, i) => `q${i}`);
    const runId = await startRun(ctx.svc.url, ctx.key, 'chain', { rows });
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 300_000);
    assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));
    assert.equal(run.output.answers.length, 2_000);
    run.output.answers.forEach((item: any, i: number) =>
      assert.equal(item.parts[0].text, `echo: B echo: A q${i}`),
    );
    const prompts = ctx.fake.requests.slice(before).map((r) => r.prompt);
    const firstOfSecond = prompts.findIndex((p) => p.startsWith('B '));
    const lastOfFirst = prompts.findLastIndex((p) => p.startsWith('A '));
    assert.ok(
      firstOfSecond >= 0 && firstOfSecond < lastOfFirst,
      `the second node began at call ${firstOfSecond}, the first node ended at call ${lastOfFirst}`,
    );
    assert.ok(
      lastOfFirst - firstOfSecond > 1_000,
      `overlap of ${lastOfFirst - firstOfSecond} calls`,
    );
  });

  it('a CSV file given to a json input feeds its rows as objects', async () => {
    const csv = ['name,city', ...Array.from({ length: 300 }, (_, i) => `n${i},"c, ${i}"`)].join(
      '\n',
    );
    const fileId = await upload('people.csv', csv);
    const runId = await startRun(ctx.svc.url, ctx.key, 'json-file-rows', { rows: fileId });
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 120_000);
    assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));
    assert.equal(run.output.answers.length, 300);
    assert.match(run.output.answers[299].parts[0].text, /n299/);
    assert.match(run.output.answers[299].parts[0].text, /c, 299/);
  });

  it('a malformed file, or one with a row past 128 KiB, fails the run naming the input and the line, before any provider call', async () => {
    const files = [
      { name: 'bad.jsonl', text: '"a"\n"b"\n{"broken": \n"d"\n', error: /line 3/ },
      {
        name: 'wide.jsonl',
        text: `"a"\n"${'w'.repeat(200_000)}"\n"c"\n`,
        error: /line 2: the row is longer than 131072 characters, the most one row of a list holds/,
      },
    ];
    for (const { name, text, error } of files) {
      const before = ctx.fake.requests.length;
      const fileId = await upload(name, text);
      const runId = await startRun(ctx.svc.url, ctx.key, 'file-rows', { rows: fileId });
      const run = await waitForRun(ctx.svc.url, ctx.key, runId, 60_000);
      assert.equal(run.status, 'failed', name);
      assert.match(run.error, /input 'rows'/);
      assert.match(run.error, error);
      assert.equal(ctx.fake.requests.length, before, 'no provider call');
      assert.equal(run.total_cost, START_FEE);
    }
  });

  it("another account's file id given to a json input is a 400 at start (the run read it as rows), nothing of the file read", async () => {
    const other = await ctx.newAccount(1);
    const theirs = await upload('theirs.jsonl', '"their secret row"\n', other.key);
    const runs = await ctx.svc.store.collections.runs.countDocuments({});
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'json-file-rows', inputs: { rows: theirs } },
    });
    expectError(res, {
      status: 400,
      type: 'invalid_request_error',
      code: 'invalid_input_fields',
      message: [`\`rows\` is not a file of this account (\`${theirs}\`)`],
    });
    assert.equal(await ctx.svc.store.collections.runs.countDocuments({}), runs, 'no run recorded');
  });

  it("a public workflow's default rows file (its owner's) feeds another account's run, omitted or given again; their own file too; the worker reads no other file of the owner", async () => {
    const owner = await ctx.newAccount(1);
    const sample = await upload('sample.csv', 'name\nAda\nBo\n', owner.key);
    const doc = fileWorkflow('public-sample', '{{row.name}}', 'json');
    const nodes = [{ ...doc.nodes[0], default: sample }, ...doc.nodes.slice(1)];
    const { workflow_id: id } = await publish(ctx.svc.url, owner.key, {
      ...doc,
      nodes,
      public: true,
    });
    const mine = await upload('mine.csv', 'name\nCy\n');
    for (const [inputs, names] of [
      [{}, ['Ada', 'Bo']],
      [{ rows: sample }, ['Ada', 'Bo']], // a re-run gives its parent's inputs, the default among them
      [{ rows: mine }, ['Cy']],
    ] as const) {
      const runId = await startRun(ctx.svc.url, ctx.key, id, inputs);
      const run = await waitForRun(ctx.svc.url, ctx.key, runId, 60_000);
      assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));
      assert.deepEqual(
        run.output.answers.map((item: any) => item.parts[0].text),
        names.map((name) => `echo: ${name}`),
      );
    }

    // The worker checks on its own (a run recorded before the start checked json inputs): of this
    // run, the default reads, another account's file is refused as if it did not exist.
    const runId = await startRun(ctx.svc.url, ctx.key, id, {});
    await waitForRun(ctx.svc.url, ctx.key, runId, 60_000);
    const { loadFileRows } = createActivities({
      collections: ctx.svc.store.collections,
      config: ctx.svc.config,
      db: ctx.svc.store.db,
    });
    const theirs = await upload('theirs.jsonl', '"their secret row"\n', owner.key);
    const env = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
    const load = (fileId: string) =>
      env.run(loadFileRows, {
        runId,
        accountId: ctx.accountId,
        nodeId: 'again',
        key: 'rows',
        fileId,
        maxRows: 10,
      });
    assert.deepEqual(await load(sample), { count: 2 });
    await assert.rejects(
      load(theirs),
      (err: ApplicationFailure) =>
        err.nonRetryable && err.message === `input 'rows': file ${theirs} does not exist`,
    );

    // The owner deletes the sample: a start that leaves the input out is told it is the default that is gone.
    await call(ctx.svc.url, 'DELETE', `/api/v1/files/${sample}`, { key: owner.key });
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: id, inputs: {} },
    });
    expectError(res, {
      status: 400,
      type: 'invalid_request_error',
      code: 'invalid_input_fields',
      message: [
        `\`rows\` has as its default the workflow's file \`${sample}\`, which no longer exists`,
      ],
    });
  });

  it('cancel: the items the run finished stay readable, and only they are billed', async () => {
    const lines = Array.from({ length: ROWS }, (_, i) => JSON.stringify(`c${i}`)).join('\n');
    const fileId = await upload('slow.jsonl', lines);
    const before = ctx.fake.requests.length;
    const runId = await startRun(ctx.svc.url, ctx.key, 'slow-file-rows', { rows: fileId });
    await waitFor(async () => (ctx.fake.requests.length - before > 1_500 ? true : undefined), {
      timeoutMs: 240_000,
      what: '1,500 calls',
    });
    const cancelled = Date.now();
    const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
      key: ctx.key,
    });
    assert.equal(cancel.status, 202);
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 60_000);
    console.log(`      cancel ended the run in ${Date.now() - cancelled} ms`);
    assert.equal(run.status, 'cancelled');
    const items = await ndjson(runId, 'answers');
    const billedRows = Math.round((run.total_cost - START_FEE) / ROW_COST);
    assert.ok(items.length >= 1_000, `${items.length} items readable`);
    assert.equal(items.length, billedRows, 'the readable items are the billed ones');
    for (const item of items) {
      assert.equal(item.status, 'completed');
      assert.equal(item.parts[0].text, `echo: slow:20 c${item.item_index}`);
    }
  });
});
