/**
 * D31: an output's items a page at a time, or as the results file, while the run is live (the
 * workflow's `outputPage` query) and once it has ended; which keys exist; what Accept chooses.
 */
import assert from 'node:assert/strict';
import {
  batchWorkflow,
  llmWorkflow,
  publish,
  rowsWorkflow,
  waitForRun,
} from '../../support/fixtures';
import { outputItemLines } from '../../../api/runs/output-items';
import { call, waitFor } from '../../support/http';
import { expectError } from '../../support/api-assert';
import { useService } from '../../support/use-service';

describe('the items of an output (D31)', function () {
  this.timeout(60_000);
  const ctx = useService({ fakeOpenAI: true });
  const outputs = (runId: string, query = '', headers: Record<string, string> = {}) =>
    call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/answers${query}`, {
      key: ctx.key,
      headers,
    });

  it('pages a live run’s items in order, those not finished as running; the results file holds them too', async () => {
    await publish(
      ctx.svc.url,
      ctx.key,
      batchWorkflow('live-pages', ['first', 'hold:live-second', 'third']),
    );
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'live-pages', inputs: {} },
    });
    const runId: string = start.body.run_id;
    try {
      const live = await waitFor(
        async () => {
          const page = await outputs(runId);
          assert.equal(page.status, 200, JSON.stringify(page.body));
          const done = page.body.data.filter((item: any) => item.status === 'completed');
          return done.length === 2 ? page.body : undefined;
        },
        { what: 'two finished items in a live page' },
      );
      assert.deepEqual(
        live.data.map((item: any) => [item.item_index, item.status]),
        [
          [0, 'completed'],
          [1, 'running'],
          [2, 'completed'],
        ],
      );
      assert.equal(live.has_more, false);

      const first = await outputs(runId, '?limit=1');
      assert.equal(first.body.data.length, 1);
      assert.equal(first.body.has_more, true);
      const next = await outputs(runId, `?limit=2&starting_after=${first.body.last_id}`);
      assert.deepEqual(
        next.body.data.map((item: any) => item.item_index),
        [1, 2],
      );
      expectError(await outputs(runId, `?starting_after=item_${'0'.repeat(26)}`), {
        status: 400,
        type: 'invalid_request_error',
        param: 'starting_after',
      });
      expectError(
        await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/nope`, { key: ctx.key }),
        { status: 404, type: 'not_found_error' },
      );

      const file = await fetch(`${ctx.svc.url}/api/v1/runs/${runId}/outputs/answers`, {
        headers: { authorization: `Bearer ${ctx.key}`, accept: 'application/x-ndjson' },
      });
      assert.equal(file.status, 200);
      const lines = (await file.text())
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.deepEqual(
        lines.map((item) => item.status),
        ['completed', 'running', 'completed'],
      );
    } finally {
      ctx.fake.release('live-second');
    }
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, runId)).status, 'completed');
  });

  it('answers 404 for a key no output of a cancelled run’s workflow has, and an empty list for one it has', async () => {
    await publish(ctx.svc.url, ctx.key, llmWorkflow('cancelled'));
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'cancelled', inputs: { topic: 'slow:30000 never-answered' } },
    });
    await waitFor(
      async () => (ctx.fake.requestsWith('never-answered').length === 1 ? true : undefined),
      { what: 'the call in flight' },
    );
    const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${start.body.run_id}/cancel`, {
      key: ctx.key,
    });
    assert.equal(cancel.status, 202);
    const run = await waitForRun(ctx.svc.url, ctx.key, start.body.run_id);
    assert.equal(run.status, 'cancelled');
    const own = await call(ctx.svc.url, 'GET', `/api/v1/runs/${run.id}/outputs/answer`, {
      key: ctx.key,
    });
    assert.equal(own.status, 200);
    assert.deepEqual(own.body.data, []);
    for (const key of ['nope', 'constructor'])
      for (const accept of ['application/json', 'text/csv'])
        expectError(
          await call(ctx.svc.url, 'GET', `/api/v1/runs/${run.id}/outputs/${key}`, {
            key: ctx.key,
            headers: { accept },
          }),
          { status: 404, type: 'not_found_error' },
        );
  });

  it('a results file whose run is deleted while it is read ends in an error, not as if complete', async () => {
    // Concurrency 4: a node of more than 8 rows keeps its items in the store (D35).
    await publish(
      ctx.svc.url,
      ctx.key,
      rowsWorkflow('deleted-mid-read', '{{row}}', { concurrency: 4 }),
    );
    const rows = Array.from({ length: 30 }, (_, i) => `r${i}`);
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'deleted-mid-read', inputs: { rows } },
      headers: { prefer: 'wait=60' },
    });
    assert.equal(start.status, 200, JSON.stringify(start.body).slice(0, 300));
    const deps = { collections: ctx.svc.store.collections, gateway: undefined as never };
    const file = await outputItemLines(deps, ctx.accountId, start.body.id, 'answers');
    const pieces = file[Symbol.asyncIterator]();
    assert.match(((await pieces.next()).value as string).split('\n')[0], /"item_index":0,/);
    const deleted = await call(ctx.svc.url, 'DELETE', `/api/v1/runs/${start.body.id}`, {
      key: ctx.key,
    });
    assert.equal(deleted.status, 200);
    await assert.rejects(
      (async () => {
        for (let next = await pieces.next(); !next.done; next = await pieces.next());
      })(),
      /deleted while its results were read/,
    );
  });

  it('serves the results file to an Accept with its charset, says the answer varies by Accept, and refuses a page’s query', async () => {
    await publish(ctx.svc.url, ctx.key, batchWorkflow('accepts', ['one', 'two']));
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'accepts', inputs: {} },
      headers: { prefer: 'wait=30' },
    });
    const runId: string = start.body.id;
    for (const [accept, type] of [
      ['text/csv; charset=utf-8', 'text/csv; charset=utf-8'],
      ['application/x-ndjson;charset=UTF-8', 'application/x-ndjson'],
      ['text/csv; header=present', 'application/json; charset=utf-8'], // a parameter we do not serve
    ]) {
      const res = await fetch(`${ctx.svc.url}/api/v1/runs/${runId}/outputs/answers`, {
        headers: { authorization: `Bearer ${ctx.key}`, accept },
      });
      assert.equal(res.status, 200, accept);
      assert.equal(res.headers.get('content-type'), type, accept);
      assert.match(res.headers.get('vary') ?? '', /\bAccept\b/, accept);
      await res.arrayBuffer();
    }
    // The file is every item: a page's query is refused, not ignored.
    const paged = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/answers?limit=1`, {
      key: ctx.key,
      headers: { accept: 'application/x-ndjson' },
    });
    expectError(paged, { status: 400, type: 'invalid_request_error', param: 'limit' });
    assert.equal(paged.body.error.message, 'Invalid query: `limit` is not a field of the query');
  });
});
