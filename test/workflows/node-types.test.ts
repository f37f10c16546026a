/**
 * Every node type on the real stack: inputs of each type, text, batch, select, join, llm
 * in its three outputs and http_request, with normalized keys, stable item ids and item indexes,
 * and the cost of the run.
 */
import assert from 'node:assert/strict';
import { snapshotQuery } from '../../workflows/definitions';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { temporalClient } from '../support/service';
import { useService } from '../support/use-service';
import { call } from '../support/http';
import { runToEnd } from '../support/runs';
import { textRowsWorkflow } from '../support/fixtures';
import { uploadFile } from '../support/files';
import { LLM_CALL_USD, PRICES, START_FEE_USD, assertItemShape, texts } from '../support/execution';

interface Target {
  url: string;
  hits: Map<string, number>;
  /** The last request's headers, by path. */
  headers: Map<string, http.IncomingHttpHeaders>;
  close(): Promise<void>;
}

/** A small HTTP server for http_request nodes: /json, /text, /missing (404), /flaky (503 once, then 200). */
async function startTarget(): Promise<Target> {
  const hits = new Map<string, number>();
  const headers = new Map<string, http.IncomingHttpHeaders>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    headers.set(path, req.headers);
    const seen = (hits.get(path) ?? 0) + 1;
    hits.set(path, seen);
    if (path === '/json') {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      return res.end(JSON.stringify({ ok: true, n: 1 }));
    }
    if (path === '/text') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      return res.end('plain body');
    }
    if (path === '/flaky') {
      if (seen === 1) {
        res.writeHead(503, { 'content-type': 'text/plain' });
        return res.end('try again later');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ recovered: true }));
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('no such thing here');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    headers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('workflow execution: every node type (real Temporal + FerretDB)', function () {
  this.timeout(120_000);
  // The http_request target listens on 127.0.0.1: the SSRF guard refuses it unless private networks are allowed.
  const ctx = useService({ fakeOpenAI: true, env: { PRICES, ALLOW_PRIVATE_NETWORK: 'true' } });
  let target: Target;
  before(async () => {
    target = await startTarget();
  });
  after(async () => target?.close());

  it('runs every node type and returns normalized keys, stable item ids and item indexes', async () => {
    const { svc, key, fake } = ctx;
    const doc = {
      slug: 'every-node',
      nodes: [
        { id: 'topic', type: 'user_input', label: 'Topic Text', input_type: 'text' },
        { id: 'count', type: 'user_input', label: 'Count (n)', input_type: 'number' },
        { id: 'flag', type: 'user_input', label: 'Gift Wrap?', input_type: 'boolean' },
        { id: 'data', type: 'user_input', label: 'Rows JSON', input_type: 'json' },
        { id: 'lines', type: 'user_input', label: 'Lines', input_type: 'text' },
        { id: 'server', type: 'user_input', label: 'Server', input_type: 'text' },
        { id: 'line', type: 'text', template: '{{topic}}|{{count}}|{{flag}}|{{data}}' },
        { id: 'node_rows', type: 'batch', rows: ['alpha', { k: 1 }, 3] },
        { id: 'json_rows', type: 'batch' },
        { id: 'text_rows', type: 'batch' },
        { id: 'second', type: 'select', index: 1 },
        { id: 'last', type: 'select', index: -1 },
        { id: 'joined', type: 'join', separator: ' + ' },
        {
          id: 'ask_text',
          type: 'llm',
          model: 'gpt-test',
          system: 'Be brief.',
          prompt: 'About {{topic}}',
        },
        {
          id: 'ask_json',
          type: 'llm',
          model: 'gpt-test',
          prompt: 'JSON about {{topic}}',
          output: 'json',
          json_schema: { type: 'object' },
        },
        {
          id: 'ask_list',
          type: 'llm',
          model: 'gpt-test',
          prompt: 'Colours of {{topic}}\nlist:red, green,blue',
          output: 'list',
        },
        { id: 'list_rows', type: 'batch', rows: ['one,two', 'three,four,five'] },
        {
          id: 'ask_lists',
          type: 'llm',
          model: 'gpt-test',
          prompt: 'Split\nlist:{{row}}',
          output: 'list',
        },
        { id: 'paths', type: 'batch', rows: ['json', 'text', 'missing', 'flaky'] },
        {
          id: 'fetch',
          type: 'http_request',
          url: '{{server}}/{{path}}',
          headers: { 'x-topic': '{{topic}}' },
        },
        ...[
          ['r_topic', 'Topic Out'],
          ['r_count', 'Count Out'],
          ['r_flag', 'Flag Out'],
          ['r_data', 'Data Out'],
          ['r_line', 'Line (text)'],
          ['r_node_rows', 'Node Rows'],
          ['r_json_rows', 'JSON Rows'],
          ['r_text_rows', 'Text Rows'],
          ['r_second', 'Second'],
          ['r_last', 'Last One!'],
          ['r_joined', 'Joined'],
          ['r_ask_text', 'LLM Text'],
          ['r_ask_json', 'LLM JSON'],
          ['r_ask_list', 'LLM List'],
          ['r_ask_lists', 'Lists Per Row'],
          ['r_fetch', 'HTTP Results'],
        ].map(([id, label]) => ({ id, type: 'user_result', label })),
      ],
      edges: [
        { from: 'topic', to: 'line', port: 'topic' },
        { from: 'count', to: 'line', port: 'count' },
        { from: 'flag', to: 'line', port: 'flag' },
        { from: 'data', to: 'line', port: 'data' },
        { from: 'data', to: 'json_rows', port: 'rows' },
        { from: 'lines', to: 'text_rows', port: 'rows' },
        { from: 'node_rows', to: 'second' },
        { from: 'node_rows', to: 'last' },
        { from: 'text_rows', to: 'joined' },
        { from: 'topic', to: 'ask_text', port: 'topic' },
        { from: 'topic', to: 'ask_json', port: 'topic' },
        { from: 'topic', to: 'ask_list', port: 'topic' },
        { from: 'list_rows', to: 'ask_lists', port: 'row' },
        { from: 'server', to: 'fetch', port: 'server' },
        { from: 'paths', to: 'fetch', port: 'path' },
        { from: 'topic', to: 'fetch', port: 'topic' },
        { from: 'topic', to: 'r_topic' },
        { from: 'count', to: 'r_count' },
        { from: 'flag', to: 'r_flag' },
        { from: 'data', to: 'r_data' },
        { from: 'line', to: 'r_line' },
        { from: 'node_rows', to: 'r_node_rows' },
        { from: 'json_rows', to: 'r_json_rows' },
        { from: 'text_rows', to: 'r_text_rows' },
        { from: 'second', to: 'r_second' },
        { from: 'last', to: 'r_last' },
        { from: 'joined', to: 'r_joined' },
        { from: 'ask_text', to: 'r_ask_text' },
        { from: 'ask_json', to: 'r_ask_json' },
        { from: 'ask_list', to: 'r_ask_list' },
        { from: 'ask_lists', to: 'r_ask_lists' },
        { from: 'fetch', to: 'r_fetch' },
      ],
    };
    const data = [{ name: 'a' }, 'b', 7];
    const run = await runToEnd(svc.url, key, doc, {
      topic_text: 'kites',
      count_n: 3,
      gift_wrap: true,
      rows_json: data,
      lines: 'one\n\ntwo\r\nthree\n',
      server: target.url,
    });
    const dump = JSON.stringify(run);
    assert.equal(run.status, 'completed', dump);
    assert.equal(run.error, null);
    const o = run.output;
    assert.deepEqual(Object.keys(o).sort(), [
      'count_out',
      'data_out',
      'flag_out',
      'http_results',
      'joined',
      'json_rows',
      'last_one',
      'line_text',
      'lists_per_row',
      'llm_json',
      'llm_list',
      'llm_text',
      'node_rows',
      'second',
      'text_rows',
      'topic_out',
    ]);
    assertItemShape(run);
    for (const [k, items] of Object.entries<any[]>(o)) {
      if (k === 'http_results') continue;
      for (const item of items)
        assert.equal(item.status, 'completed', `${k}: ${JSON.stringify(item)}`);
    }

    // user_input of each type: a text part, or a json part for number, boolean and json.
    assert.deepEqual(
      o.topic_out.map((i: any) => i.parts),
      [[{ type: 'text', text: 'kites' }]],
    );
    assert.deepEqual(
      o.count_out.map((i: any) => i.parts),
      [[{ type: 'json', data: 3 }]],
    );
    assert.deepEqual(
      o.flag_out.map((i: any) => i.parts),
      [[{ type: 'json', data: true }]],
    );
    assert.deepEqual(
      o.data_out.map((i: any) => i.parts),
      [[{ type: 'json', data }]],
    );
    // text: json parts render as JSON.
    assert.deepEqual(texts(o.line_text), [`kites|3|true|${JSON.stringify(data)}`]);

    // batch: from the node's rows, from a json input, from text lines (blank lines dropped).
    assert.deepEqual(
      o.node_rows.map((i: any) => i.parts),
      [
        [{ type: 'text', text: 'alpha' }],
        [{ type: 'json', data: { k: 1 } }],
        [{ type: 'json', data: 3 }],
      ],
    );
    assert.deepEqual(
      o.json_rows.map((i: any) => i.parts),
      [
        [{ type: 'json', data: { name: 'a' } }],
        [{ type: 'text', text: 'b' }],
        [{ type: 'json', data: 7 }],
      ],
    );
    assert.deepEqual(texts(o.text_rows), ['one', 'two', 'three']);
    // select, positive and negative index; join.
    assert.deepEqual(
      o.second.map((i: any) => i.parts),
      [[{ type: 'json', data: { k: 1 } }]],
    );
    assert.deepEqual(
      o.last_one.map((i: any) => i.parts),
      [[{ type: 'json', data: 3 }]],
    );
    assert.deepEqual(texts(o.joined), ['one + two + three']);

    // llm: text, json, and structured lists (one item per element, across iterations in order).
    assert.deepEqual(texts(o.llm_text), ['echo: About kites']);
    assert.deepEqual(
      o.llm_json.map((i: any) => i.parts),
      [[{ type: 'json', data: { echo: 'JSON about kites' } }]],
    );
    assert.deepEqual(texts(o.llm_list), ['red', 'green', 'blue']);
    assert.deepEqual(texts(o.lists_per_row), ['one', 'two', 'three', 'four', 'five']);
    const textCall = fake.requestsWith('About kites').find((r) => !r.prompt.includes('JSON'))!;
    assert.deepEqual(textCall.body.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'About kites' },
    ]);
    assert.equal(textCall.body.model, 'gpt-test');
    assert.equal(textCall.body.response_format, undefined);

    // http_request: json → json part, text → text part, 404 fails only its item, 503 then 200 retries.
    const [asJson, asText, missing, flaky] = o.http_results;
    assert.equal(o.http_results.length, 4, dump);
    assert.deepEqual(
      [asJson.status, asText.status, missing.status, flaky.status],
      ['completed', 'completed', 'failed', 'completed'],
    );
    assert.deepEqual(asJson.parts, [{ type: 'json', data: { ok: true, n: 1 } }]);
    assert.deepEqual(asText.parts, [{ type: 'text', text: 'plain body' }]);
    assert.deepEqual(missing.parts, []);
    assert.equal(missing.error.code, 404);
    assert.match(missing.error.message, /404/);
    assert.match(missing.error.message, /no such thing here/);
    assert.deepEqual(flaky.parts, [{ type: 'json', data: { recovered: true } }]);
    assert.equal(target.hits.get('/flaky'), 2, 'the 503 was retried once');
    assert.equal(target.hits.get('/missing'), 1, 'a 404 is not retried');
    assert.equal(
      target.headers.get('/json')?.['x-topic'],
      'kites',
      'header templates are rendered',
    );

    // Item ids are stable: a second read gives the same record (the first may have come from the
    // live workflow, this one from the stored record) ...
    await temporalClient(svc).workflow.getHandle(run.id).result();
    const again = await call(svc.url, 'GET', `/api/v1/runs/${run.id}`, { key });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, run);
    // ... and so does the closed workflow when a query makes the worker replay its history (asked
    // directly: the API itself does not query closed workflows, their records answer).
    assert.equal(
      await svc.api.gateway.snapshot(run.id),
      null,
      'the API leaves a closed workflow alone',
    );
    const replayed = await temporalClient(svc)
      .workflow.getHandle(run.id)
      .query(snapshotQuery, Number.MAX_SAFE_INTEGER);
    assert.deepEqual(replayed.output, run.output);
    assert.equal(replayed.total_cost, run.total_cost);

    // Cost: start fee plus 5 priced llm calls (text, json, list, and a list per each of 2 rows).
    assert.ok(
      Math.abs(run.total_cost - (START_FEE_USD + 5 * LLM_CALL_USD)) < 1e-9,
      `total_cost ${run.total_cost}`,
    );
  });

  it("fills placeholders from inside JSON rows: a CSV file's columns", async () => {
    const { svc, key } = ctx;
    const csv = 'name,Home Town\nAda,London\n"Grace, R.",Arlington\n';
    const file = await uploadFile(svc.url, key, 'people.csv', csv);
    const doc = {
      slug: 'row-fields',
      nodes: [
        { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'file' },
        { id: 'split', type: 'batch' },
        { id: 'line', type: 'text', template: '{{ row.name }} of {{ row["Home Town"] }}' },
        { id: 'ask', type: 'llm', model: 'gpt-4o-mini', prompt: 'Greet {{row.name}}' },
        { id: 'lines', type: 'user_result', label: 'Lines' },
        { id: 'greetings', type: 'user_result', label: 'Greetings' },
      ],
      edges: [
        { from: 'rows', to: 'split', port: 'rows' },
        { from: 'split', to: 'line', port: 'row' },
        { from: 'split', to: 'ask', port: 'row' },
        { from: 'line', to: 'lines' },
        { from: 'ask', to: 'greetings' },
      ],
    };
    const run = await runToEnd(svc.url, key, doc, { rows: file });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.deepEqual(texts(run.output.lines), ['Ada of London', 'Grace, R. of Arlington']);
    assert.deepEqual(texts(run.output.greetings), ['echo: Greet Ada', 'echo: Greet Grace, R.']);
  });

  it('fails a batch whose text holds a JSON array nested deeper than 64 levels, naming the node (5,002 levels: the run never ended)', async () => {
    const doc = textRowsWorkflow('deep-rows', '{{row}}', { input_type: 'text' });
    const run = await runToEnd(ctx.svc.url, ctx.key, doc, {
      rows: `${'['.repeat(5_002)}${']'.repeat(5_002)}`,
    });
    assert.equal(run.status, 'failed');
    assert.match(run.error, /split.*rows input is JSON nested deeper than 64 levels/);
  });
});
