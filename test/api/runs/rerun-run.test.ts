/**
 * D38: re-running a run. A re-run of failed items runs only the rows that failed (the fake
 * provider refuses chosen rows the first time only), carries the completed ones over unchanged,
 * bills only what ran, and names its parent; small (inline) and big (stored, D35) runs alike.
 * `items: "all"` runs everything again; idempotency keys work as for a start; nothing to re-run,
 * an unfinished parent and another account's run are refused with their documented codes.
 */
import assert from 'node:assert/strict';
import { batchWorkflow, publish, rowsWorkflow, waitForRun } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { expectError } from '../../support/api-assert';
import { LLM_CALL_USD, PRICES, START_FEE_USD } from '../../support/execution';
import { bookedDebit, startRun } from '../../support/runs';
import { useService } from '../../support/use-service';
import { events, openSse } from '../../support/sse';

const money = (usd: number) => Math.round(usd * 1e9) / 1e9;

describe('re-running a run (D38)', function () {
  this.timeout(240_000);
  const ctx = useService({ fakeOpenAI: true, credit: 100, env: { PRICES } });

  const rerun = (
    runId: string,
    body: unknown,
    opts: { key?: string; headers?: Record<string, string> } = {},
  ) =>
    call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/rerun`, {
      key: opts.key ?? ctx.key,
      headers: opts.headers,
      body,
    });
  const started = (res: { status: number; body: any }): string => {
    assert.equal(res.status, 202, JSON.stringify(res.body));
    return res.body.run_id;
  };
  const debitOf = async (runId: string) =>
    (await bookedDebit(ctx.svc.store.collections, runId)).amount_usd;
  const calls = (tag: string) => ctx.fake.requestsWith(tag).length;

  it('re-runs only the failed items of a small run: completed items carried over unchanged, only re-run rows billed, parent_run_id set', async () => {
    const rows = ['a sm1', 'b sm1 refuseonce:sm1b', 'c sm1', 'd sm1 refuseonce:sm1d'];
    await publish(ctx.svc.url, ctx.key, batchWorkflow('rerun-small', rows));
    const parentId = await startRun(
      ctx.svc.url,
      ctx.key,
      'rerun-small',
      {},
      {
        body: { metadata: { order: 'o-1' } },
      },
    );
    const parent = await waitForRun(ctx.svc.url, ctx.key, parentId);
    assert.equal(parent.status, 'completed');
    assert.deepEqual(
      parent.output.answers.map((i: any) => i.status),
      ['completed', 'failed', 'completed', 'failed'],
    );
    assert.equal(parent.parent_run_id, null);
    assert.equal(calls('sm1'), 4);

    const childId = started(await rerun(parentId, { items: 'failed' }));
    const child = await waitForRun(ctx.svc.url, ctx.key, childId);
    assert.equal(child.status, 'completed', JSON.stringify(child));
    assert.equal(child.parent_run_id, parentId);
    assert.deepEqual(child.metadata, { order: 'o-1' });
    assert.equal(child.published_workflow_version_id, parent.published_workflow_version_id);
    const items = child.output.answers;
    assert.deepEqual(
      items.map((i: any) => i.status),
      ['completed', 'completed', 'completed', 'completed'],
    );
    // Carried items are the parent's, parts and all; the failed ones ran again (and only they did).
    assert.deepEqual(items[0].parts, parent.output.answers[0].parts);
    assert.deepEqual(items[2].parts, parent.output.answers[2].parts);
    assert.equal(items[1].parts[0].text, 'echo: b sm1 refuseonce:sm1b');
    assert.equal(calls('sm1'), 6, 'two rows ran again, no more');
    assert.equal(child.total_cost, money(START_FEE_USD + 2 * LLM_CALL_USD));
    assert.equal(await debitOf(childId), -child.total_cost, 'the ledger bills only what ran');

    // The list shows the link too.
    const list = await call(ctx.svc.url, 'GET', '/api/v1/runs?limit=10', { key: ctx.key });
    const listed = list.body.data.find((r: any) => r.id === childId);
    assert.equal(listed.parent_run_id, parentId);

    // Nothing failed any more: a re-run of failed items has nothing to do.
    expectError(await rerun(childId, { items: 'failed' }), {
      status: 400,
      type: 'invalid_request_error',
      code: 'nothing_to_rerun',
    });

    // A body that is no object (JSON `null`, found by schemathesis: it was read as `{}` and
    // started a run) is refused as a start's is.
    expectError(await rerun(parentId, null), { status: 400, type: 'invalid_request_error' });

    // `all` runs every row again, billed as a start.
    const allId = started(await rerun(parentId, {}));
    const all = await waitForRun(ctx.svc.url, ctx.key, allId);
    assert.equal(all.status, 'completed');
    assert.equal(all.parent_run_id, parentId);
    assert.equal(calls('sm1'), 10, 'every row ran again');
    assert.equal(all.total_cost, money(START_FEE_USD + 4 * LLM_CALL_USD));
  });

  /** `rows` (a JSON input) through a batch into an `llm` of `prompt` (of `output`), its answers the result. */
  const rowsLlm = (slug: string, prompt: string, output?: 'list') => ({
    slug,
    nodes: [
      { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'json' },
      { id: 'each', type: 'batch' },
      { id: 'ask', type: 'llm', model: 'gpt-test', prompt, ...(output ? { output } : {}) },
      { id: 'out', type: 'user_result', label: 'Answers' },
    ],
    edges: [
      { from: 'rows', to: 'each', port: 'rows' },
      { from: 'each', to: 'ask', port: 'row' },
      { from: 'ask', to: 'out' },
    ],
  });
  const texts = (run: any): string[] =>
    run.output.answers.map((i: any) => i.parts[0]?.text ?? `<${i.status}>`);
  const page = async (runId: string) =>
    (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/answers`, { key: ctx.key })).body
      .data;

  it('a cancelled small run keeps each finished item at its row, as its live page showed it; its re-run runs the unfinished row, carries the others', async () => {
    await publish(ctx.svc.url, ctx.key, rowsLlm('rerun-cancelled', '{{row}}'));
    const parentId = await startRun(ctx.svc.url, ctx.key, 'rerun-cancelled', {
      rows: ['hold:rc1 first', 'second rc1', 'third rc1'],
    });
    const live = await waitFor(async () => {
      const items = await page(parentId);
      return items?.filter((i: any) => i.status === 'completed').length === 2 ? items : undefined;
    });
    assert.deepEqual(
      live.map((i: any) => [i.item_index, i.status]),
      [
        [0, 'running'],
        [1, 'completed'],
        [2, 'completed'],
      ],
    );
    await call(ctx.svc.url, 'POST', `/api/v1/runs/${parentId}/cancel`, { key: ctx.key });
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, parentId)).status, 'cancelled');
    ctx.fake.release('rc1');
    // Before, the kept items were numbered from 0 once the run ended: row 1's answer showed as row 0.
    assert.deepEqual(
      (await page(parentId)).map((i: any) => [i.id, i.item_index]),
      live.slice(1).map((i: any) => [i.id, i.item_index]),
    );

    const child = await waitForRun(
      ctx.svc.url,
      ctx.key,
      started(await rerun(parentId, { items: 'failed' })),
    );
    assert.equal(child.status, 'completed', JSON.stringify(child));
    // Before: ['echo: second rc1', 'echo: third rc1', 'echo: third rc1'], row 0 never ran.
    assert.deepEqual(texts(child), ['echo: hold:rc1 first', 'echo: second rc1', 'echo: third rc1']);
    assert.equal(calls('rc1'), 4, 'the three rows of the parent, and its unfinished row again');
  });

  it('a re-run of a failed small run (a row gave up) runs that row and carries the others to their own rows', async () => {
    await publish(ctx.svc.url, ctx.key, rowsLlm('rerun-gave-up', '{{row}}'));
    const parentId = await startRun(ctx.svc.url, ctx.key, 'rerun-gave-up', {
      rows: ['flaky:rg1:5 first', 'second rg1', 'third rg1'],
    });
    const parent = await waitForRun(ctx.svc.url, ctx.key, parentId);
    assert.equal(parent.status, 'failed', JSON.stringify(parent.error));
    assert.deepEqual(
      (await page(parentId)).map((i: any) => i.item_index),
      [1, 2],
    );
    const child = await waitForRun(
      ctx.svc.url,
      ctx.key,
      started(await rerun(parentId, { items: 'failed' })),
    );
    assert.equal(child.status, 'completed', JSON.stringify(child));
    assert.deepEqual(texts(child), [
      'echo: flaky:rg1:5 first',
      'echo: second rg1',
      'echo: third rg1',
    ]);

    // A parent that ended so before its record said where its items are (items numbered from 0):
    // its rows run again, none carried into another's place.
    await ctx.svc.store.collections.runs.updateOne(
      { _id: parentId },
      { $unset: { items_at_rows: '' } },
    );
    const before = calls('rg1');
    const again = await waitForRun(
      ctx.svc.url,
      ctx.key,
      started(await rerun(parentId, { items: 'failed' })),
    );
    assert.deepEqual(texts(again), texts(child));
    assert.equal(calls('rg1') - before, 3, 'every row ran again');
  });

  it('a re-run cancelled while rows wait to start keeps its carried items at their rows; its own re-run gives every row its answer', async () => {
    await publish(ctx.svc.url, ctx.key, rowsLlm('rerun-gap', '{{row}}'));
    // Ten rows fail once, two complete; the re-run runs the ten at concurrency 8: two wait.
    const rows = [
      ...Array.from({ length: 10 }, (_, i) => `slow:4000 refuseonce:gp${i} gap row ${i}`),
      'gap row 10',
      'gap row 11',
    ];
    const parentId = await startRun(ctx.svc.url, ctx.key, 'rerun-gap', { rows });
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, parentId)).status, 'completed');
    const calledBefore = calls('gap row');
    const childId = started(await rerun(parentId, { items: 'failed' }));
    await waitFor(async () => (calls('gap row') - calledBefore >= 8 ? true : undefined));
    await call(ctx.svc.url, 'POST', `/api/v1/runs/${childId}/cancel`, { key: ctx.key });
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, childId)).status, 'cancelled');
    // Before, the carried rows 10 and 11 were numbered 8 and 9 (places among the rows started).
    const kept = await page(childId);
    assert.deepEqual(
      kept.map((i: any) => [i.item_index, i.parts[0].text]),
      [
        [10, 'echo: gap row 10'],
        [11, 'echo: gap row 11'],
      ],
    );
    const grand = await waitForRun(
      ctx.svc.url,
      ctx.key,
      started(await rerun(childId, { items: 'failed' })),
    );
    assert.deepEqual(
      texts(grand),
      rows.map((row) => `echo: ${row}`),
    );
  });

  it("a re-run of an llm of lists (several items a row) runs that node again whole: every row's items, none in another's place", async () => {
    await publish(ctx.svc.url, ctx.key, rowsLlm('rerun-lists', 'list:{{row}}', 'list'));
    const parentId = await startRun(ctx.svc.url, ctx.key, 'rerun-lists', {
      rows: ['a,b', 'refuseonce:rl1 x,y', 'c,d'],
    });
    const parent = await waitForRun(ctx.svc.url, ctx.key, parentId);
    assert.equal(parent.status, 'completed');
    assert.deepEqual(texts(parent), ['a', 'b', '<failed>', 'c', 'd']);
    const child = await waitForRun(
      ctx.svc.url,
      ctx.key,
      started(await rerun(parentId, { items: 'failed' })),
    );
    // Before: ['a', 'b', 'c', 'd'] (row 1 gone) with row 2 called and billed again.
    assert.deepEqual(texts(child), ['a', 'b', 'refuseonce:rl1 x', 'y', 'c', 'd']);
    assert.equal(child.total_cost, money(START_FEE_USD + 3 * LLM_CALL_USD));
  });

  it('re-runs only the failed rows of a big stored run (300 rows, D35)', async () => {
    const failing = new Set([5, 150, 299]);
    const rows = Array.from({ length: 300 }, (_, i) =>
      failing.has(i) ? `r${i} bg1 refuseonce:bg1r${i}` : `r${i} bg1`,
    );
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('rerun-big'));
    const parentId = await startRun(ctx.svc.url, ctx.key, 'rerun-big', { rows });
    const parent = await waitForRun(ctx.svc.url, ctx.key, parentId, 120_000);
    assert.equal(parent.status, 'completed');
    const failedRows = parent.output.answers.flatMap((i: any, k: number) =>
      i.status === 'failed' ? [k] : [],
    );
    assert.deepEqual(failedRows, [...failing]);
    assert.equal(calls('bg1'), 300);

    const childId = started(await rerun(parentId, { items: 'failed', stream: false }));
    const child = await waitForRun(ctx.svc.url, ctx.key, childId, 120_000);
    assert.equal(child.status, 'completed', JSON.stringify(child).slice(0, 500));
    assert.equal(child.parent_run_id, parentId);
    assert.equal(calls('bg1'), 303, 'only the three failed rows ran again');
    child.output.answers.forEach((item: any, k: number) => {
      assert.equal(item.status, 'completed', `row ${k}`);
      if (!failing.has(k)) assert.deepEqual(item.parts, parent.output.answers[k].parts, `row ${k}`);
    });
    assert.equal(child.total_cost, money(START_FEE_USD + 3 * LLM_CALL_USD));
    assert.equal(await debitOf(childId), -child.total_cost);
  });

  it('re-runs a failed row through a chain of big nodes (rows → a → b): both run it again, nothing else', async () => {
    const failing = new Set([7, 201]);
    const rows = Array.from({ length: 300 }, (_, i) =>
      failing.has(i) ? `r${i} ch1 refuseonce:ch1r${i}` : `r${i} ch1`,
    );
    const doc = rowsWorkflow('rerun-chain', 'A {{row}}');
    doc.nodes.splice(3, 0, { id: 'again', type: 'llm', model: 'gpt-test', prompt: 'B {{row}}' });
    doc.edges = [
      { from: 'rows', to: 'split', port: 'rows' },
      { from: 'split', to: 'ask', port: 'row' },
      { from: 'ask', to: 'again', port: 'row' },
      { from: 'again', to: 'out' },
    ];
    await publish(ctx.svc.url, ctx.key, doc);
    const parentId = await startRun(ctx.svc.url, ctx.key, 'rerun-chain', { rows });
    const parent = await waitForRun(ctx.svc.url, ctx.key, parentId, 120_000);
    assert.equal(parent.status, 'completed');
    assert.equal(parent.output.answers[7].status, 'failed');
    assert.equal(parent.output.answers[7].error.type, 'upstream_failed');
    assert.equal(calls('ch1'), 600 - failing.size);

    const childId = started(await rerun(parentId, { items: 'failed' }));
    const child = await waitForRun(ctx.svc.url, ctx.key, childId, 120_000);
    assert.equal(child.status, 'completed');
    assert.equal(
      calls('ch1'),
      600 - failing.size + 2 * failing.size,
      'each failed row ran through both nodes, no other row did',
    );
    child.output.answers.forEach((item: any, k: number) => {
      assert.equal(item.status, 'completed', `row ${k}`);
      if (!failing.has(k)) assert.deepEqual(item.parts, parent.output.answers[k].parts, `row ${k}`);
    });
    assert.equal(child.total_cost, money(START_FEE_USD + 2 * failing.size * LLM_CALL_USD));
  });

  it('honours an Idempotency-Key: the same re-run once, another body with the key is 409', async () => {
    await publish(
      ctx.svc.url,
      ctx.key,
      batchWorkflow('rerun-idem', ['x id1 refuseonce:id1x', 'y id1']),
    );
    const parentId = await startRun(ctx.svc.url, ctx.key, 'rerun-idem');
    await waitForRun(ctx.svc.url, ctx.key, parentId);
    const headers = { 'Idempotency-Key': `rerun-${parentId}` };
    const first = started(await rerun(parentId, { items: 'failed' }, { headers }));
    const again = started(await rerun(parentId, { items: 'failed' }, { headers }));
    assert.equal(again, first);
    expectError(await rerun(parentId, { items: 'all' }, { headers }), {
      status: 409,
      type: 'invalid_request_error',
      code: 'idempotency_key_reused',
    });
    const child = await waitForRun(ctx.svc.url, ctx.key, first);
    assert.equal(child.status, 'completed');
    assert.equal(calls('id1'), 3, 'the failed row ran once more, once');
    // Once the re-run completed, a repeat still answers with it (it was 400 nothing_to_rerun,
    // judged as a first request), and the key on another re-run's body is 409, not that 400.
    assert.equal(started(await rerun(parentId, { items: 'failed' }, { headers })), first);
    expectError(await rerun(first, { items: 'failed' }, { headers }), {
      status: 409,
      type: 'invalid_request_error',
      code: 'idempotency_key_reused',
    });
  });

  it('streams a re-run with `stream: true`, as a start streams (response.created … response.completed)', async () => {
    await publish(
      ctx.svc.url,
      ctx.key,
      batchWorkflow('rerun-stream', ['s st1 refuseonce:st1s', 't st1']),
    );
    const parentId = await startRun(ctx.svc.url, ctx.key, 'rerun-stream');
    await waitForRun(ctx.svc.url, ctx.key, parentId);
    const sse = await openSse(`${ctx.svc.url}/api/v1/runs/${parentId}/rerun`, {
      method: 'POST',
      key: ctx.key,
      body: { items: 'failed', stream: true },
    });
    assert.equal(sse.status, 200);
    await sse.closed;
    const all = events(sse);
    assert.equal(all[0].type, 'response.created');
    assert.equal(all.at(-1).type, 'response.completed');
    const childId = all[0].response.run_id;
    assert.notEqual(childId, parentId);
    const child = await waitForRun(ctx.svc.url, ctx.key, childId);
    assert.equal(child.parent_run_id, parentId);
    assert.deepEqual(
      child.output.answers.map((i: any) => i.status),
      ['completed', 'completed'],
    );
    assert.equal(calls('st1'), 3);
  });

  it('refuses an unfinished parent (409 run_not_finished), and another account’s or an unknown run (404)', async () => {
    await publish(ctx.svc.url, ctx.key, batchWorkflow('rerun-slow', ['slow:5000 sl1']));
    const liveId = await startRun(ctx.svc.url, ctx.key, 'rerun-slow');
    expectError(await rerun(liveId, { items: 'failed' }), {
      status: 409,
      type: 'invalid_request_error',
      code: 'run_not_finished',
    });
    const other = await ctx.newAccount();
    expectError(await rerun(liveId, { items: 'all' }, { key: other.key }), {
      status: 404,
      type: 'not_found_error',
      code: 'not_found',
    });
    expectError(await rerun('run_01J000000000000000000000000', {}), {
      status: 404,
      type: 'not_found_error',
      code: 'not_found',
    });
    expectError(await rerun(liveId, { items: 'some' }), {
      status: 400,
      type: 'invalid_request_error',
    });
    await call(ctx.svc.url, 'POST', `/api/v1/runs/${liveId}/cancel`, { key: ctx.key });
  });
});
