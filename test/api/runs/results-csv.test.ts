/**
 * D35: the results file as CSV (`Accept: text/csv`) on the real stack, for an output kept in the
 * run's record and for one kept in the store (a big node's items): the same items as the JSON
 * Lines file, in order, each a record csv-parse reads back, failed rows with their message.
 */
import assert from 'node:assert/strict';
import { publish, rowsWorkflow } from '../../support/fixtures';
import { call } from '../../support/http';
import { PRICES } from '../../support/execution';
import { resultsCsv, resultsFile } from '../../support/files';
import { useService } from '../../support/use-service';

describe('the CSV results file of an output (D35)', function () {
  this.timeout(120_000);
  const ctx = useService({ fakeOpenAI: true, credit: 100, env: { PRICES } });
  before(async () => {
    // Concurrency 4: a node of more than 8 rows keeps its items in the store.
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('csv-rows', '{{row}}', { concurrency: 4 }));
  });

  // Every third row is refused by the fake; every fifth holds a comma, quotes and a line break.
  const row = (i: number) =>
    i % 3 === 1 ? `status:400 r${i}` : i % 5 === 0 ? `r${i}, "quoted"\nline two` : `r${i}`;

  for (const [size, kept] of [
    [6, 'in the run record'],
    [30, 'in the store'],
  ] as const) {
    it(`${size} rows, items kept ${kept}: one record per item, in order, as the JSON Lines file has them`, async () => {
      const rows = Array.from({ length: size }, (_, i) => row(i));
      const started = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'csv-rows', inputs: { rows } },
        headers: { prefer: 'wait=60' },
      });
      assert.equal(started.status, 200, JSON.stringify(started.body).slice(0, 300));
      const runId: string = started.body.id;

      const csv = await resultsCsv(ctx.svc.url, ctx.key, runId, 'answers');
      assert.equal(csv.headers.get('content-type'), 'text/csv; charset=utf-8');
      assert.equal(
        csv.headers.get('content-disposition'),
        `attachment; filename="${runId}-answers.csv"`,
      );
      assert.deepEqual(csv.header, ['item_index', 'id', 'status', 'output', 'error']);
      const items = await resultsFile(ctx.svc.url, ctx.key, runId, 'answers');
      assert.equal(items.length, size);
      assert.deepEqual(
        csv.records,
        items.map((item: any) => [
          String(item.item_index),
          item.id,
          item.status,
          item.status === 'completed' ? `echo: ${rows[item.item_index]}` : '',
          item.error?.message ?? '',
        ]),
      );
      assert.deepEqual(
        csv.records.map((r) => r[2]),
        rows.map((r) => (r.startsWith('status:') ? 'failed' : 'completed')),
      );
      assert.match(csv.records[1][4], /status 400/);
    });
  }

  it('answers a page of JSON when Accept prefers it, and refuses an unknown output with the JSON error', async () => {
    const started = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'csv-rows', inputs: { rows: ['a'] } },
      headers: { prefer: 'wait=60' },
    });
    const output = (name: string, accept: string) =>
      fetch(`${ctx.svc.url}/api/v1/runs/${started.body.id}/outputs/${name}`, {
        headers: { authorization: `Bearer ${ctx.key}`, accept },
      });
    for (const accept of ['text/csv;q=0.5, application/json', '*/*', 'image/png']) {
      const res = await output('answers', accept);
      assert.equal(res.status, 200, accept);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/, accept);
      assert.equal(((await res.json()) as any).object, 'list', accept);
    }
    const res = await output('nothing', 'text/csv');
    assert.equal(res.status, 404);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(((await res.json()) as any).error.type, 'not_found_error');
  });
});
