/**
 * Execution of published graphs on the real stack (issue 2): every node type, item failures
 * that keep their place, provider retries, node failures that fail the run (D9), pending
 * without a worker (D7), the run record after Temporal forgot the run, one ledger debit per
 * run (D17), and ownership (spec "Authentication").
 */
import { accountBalance } from '../../store/ledger';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WorkflowNotFoundError } from '@temporalio/client';
import { startService, type TestService, temporalClient } from '../support/service';
import { newAccount } from '../support/accounts';
import { call, waitFor } from '../support/http';
import { publish, waitForRun } from '../support/fixtures';
import { expectError } from '../support/api-assert';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import { isId } from '../../domain/ids';
import { createActivities } from '../../activities';
import type { RunFinal } from '../../domain/run';
import { findRunRecord } from '../../store/runs';

const PRICES = JSON.stringify({ 'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 } });
// The fake reports 100 prompt and 50 completion tokens per call: 100 * $1/M + 50 * $2/M.
const LLM_CALL_USD = (100 * 1 + 50 * 2) / 1e6;
const START_FEE_USD = 0.001;

/** Starts a run and returns its id (asserting the 202). */
async function startRun(svc: TestService, key: string, workflowId: string, inputs: Record<string, unknown> = {}): Promise<string> {
  const res = await call(svc.url, 'POST', '/api/v1/responses', { key, body: { workflowId, inputs } });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.ok(isId('run', res.body.run_id), res.body.run_id);
  return res.body.run_id;
}

/** Publishes, runs to the end and returns the final run record. */
async function runToEnd(svc: TestService, key: string, doc: { slug: string }, inputs: Record<string, unknown> = {}): Promise<any> {
  await publish(svc.url, key, doc);
  const runId = await startRun(svc, key, doc.slug, inputs);
  return waitForRun(svc.url, key, runId);
}

function texts(items: any[]): string[] {
  return items.map((item) => item.parts[0]?.text);
}

/** Every output item is well-formed: an `item_` id, unique in the run, and item_index 0..n-1 per key. */
function assertItemShape(run: any): void {
  const ids = new Set<string>();
  for (const [key, items] of Object.entries<any[]>(run.output)) {
    items.forEach((item, i) => {
      assert.ok(isId('item', item.id), `${key}[${i}] id ${item.id}`);
      assert.ok(!ids.has(item.id), `${key}[${i}] id ${item.id} is not unique`);
      ids.add(item.id);
      assert.equal(item.item_index, i, `${key}[${i}] item_index`);
      assert.ok(Array.isArray(item.parts), `${key}[${i}] parts`);
    });
  }
}

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
  return { url: `http://127.0.0.1:${port}`, hits, headers, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('workflow execution (real Temporal + FerretDB)', function () {
  this.timeout(120_000);
  let fake: FakeOpenAI;
  before(async () => {
    fake = await startFakeOpenAI();
  });
  after(async () => fake?.close());

  describe('with a worker and the fake provider', () => {
    let svc: TestService;
    let target: Target;
    before(async () => {
      [svc, target] = await Promise.all([
        // The http_request target listens on 127.0.0.1: the SSRF guard refuses it unless private networks are allowed.
        startService({ env: { OPENAI_BASE_URL: fake.baseUrl, PRICES, ALLOW_PRIVATE_NETWORK: 'true' } }),
        startTarget(),
      ]);
    });
    after(async () => {
      await svc?.close();
      await target?.close();
    });

    it('runs every node type and returns normalized keys, stable item ids and item indexes', async () => {
      const { key } = await newAccount(svc.store.collections);
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
          { id: 'ask_text', type: 'llm', model: 'gpt-test', system: 'Be brief.', prompt: 'About {{topic}}' },
          { id: 'ask_json', type: 'llm', model: 'gpt-test', prompt: 'JSON about {{topic}}', output: 'json', json_schema: { type: 'object' } },
          { id: 'ask_list', type: 'llm', model: 'gpt-test', prompt: 'Colours of {{topic}}\nlist:red, green,blue', output: 'list' },
          { id: 'list_rows', type: 'batch', rows: ['one,two', 'three,four,five'] },
          { id: 'ask_lists', type: 'llm', model: 'gpt-test', prompt: 'Split\nlist:{{row}}', output: 'list' },
          { id: 'paths', type: 'batch', rows: ['json', 'text', 'missing', 'flaky'] },
          { id: 'fetch', type: 'http_request', url: '{{server}}/{{path}}', headers: { 'x-topic': '{{topic}}' } },
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
      const run = await runToEnd(svc, key, doc, {
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
        'count_out', 'data_out', 'flag_out', 'http_results', 'joined', 'json_rows', 'last_one', 'line_text', 'lists_per_row',
        'llm_json', 'llm_list', 'llm_text', 'node_rows', 'second', 'text_rows', 'topic_out',
      ]);
      assertItemShape(run);
      for (const [k, items] of Object.entries<any[]>(o)) {
        if (k === 'http_results') continue;
        for (const item of items) assert.equal(item.status, 'completed', `${k}: ${JSON.stringify(item)}`);
      }

      // user_input of each type: a text part, or a json part for number, boolean and json.
      assert.deepEqual(o.topic_out.map((i: any) => i.parts), [[{ type: 'text', text: 'kites' }]]);
      assert.deepEqual(o.count_out.map((i: any) => i.parts), [[{ type: 'json', data: 3 }]]);
      assert.deepEqual(o.flag_out.map((i: any) => i.parts), [[{ type: 'json', data: true }]]);
      assert.deepEqual(o.data_out.map((i: any) => i.parts), [[{ type: 'json', data }]]);
      // text: json parts render as JSON.
      assert.deepEqual(texts(o.line_text), [`kites|3|true|${JSON.stringify(data)}`]);

      // batch: from the node's rows, from a json input, from text lines (blank lines dropped).
      assert.deepEqual(o.node_rows.map((i: any) => i.parts), [
        [{ type: 'text', text: 'alpha' }],
        [{ type: 'json', data: { k: 1 } }],
        [{ type: 'json', data: 3 }],
      ]);
      assert.deepEqual(o.json_rows.map((i: any) => i.parts), [
        [{ type: 'json', data: { name: 'a' } }],
        [{ type: 'text', text: 'b' }],
        [{ type: 'json', data: 7 }],
      ]);
      assert.deepEqual(texts(o.text_rows), ['one', 'two', 'three']);
      // select, positive and negative index; join.
      assert.deepEqual(o.second.map((i: any) => i.parts), [[{ type: 'json', data: { k: 1 } }]]);
      assert.deepEqual(o.last_one.map((i: any) => i.parts), [[{ type: 'json', data: 3 }]]);
      assert.deepEqual(texts(o.joined), ['one + two + three']);

      // llm: text, json, and structured lists (one item per element, across iterations in order).
      assert.deepEqual(texts(o.llm_text), ['echo: About kites']);
      assert.deepEqual(o.llm_json.map((i: any) => i.parts), [[{ type: 'json', data: { echo: 'JSON about kites' } }]]);
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
      assert.deepEqual([asJson.status, asText.status, missing.status, flaky.status], ['completed', 'completed', 'failed', 'completed']);
      assert.deepEqual(asJson.parts, [{ type: 'json', data: { ok: true, n: 1 } }]);
      assert.deepEqual(asText.parts, [{ type: 'text', text: 'plain body' }]);
      assert.deepEqual(missing.parts, []);
      assert.equal(missing.error.code, 404);
      assert.match(missing.error.message, /404/);
      assert.match(missing.error.message, /no such thing here/);
      assert.deepEqual(flaky.parts, [{ type: 'json', data: { recovered: true } }]);
      assert.equal(target.hits.get('/flaky'), 2, 'the 503 was retried once');
      assert.equal(target.hits.get('/missing'), 1, 'a 404 is not retried');
      assert.equal(target.headers.get('/json')?.['x-topic'], 'kites', 'header templates are rendered');

      // Item ids are stable: a second read gives the same record (the first may have come from the
      // live workflow, this one from the stored record) ...
      await temporalClient(svc).workflow.getHandle(run.id).result();
      const again = await call(svc.url, 'GET', `/api/v1/runs/${run.id}`, { key });
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, run);
      // ... and so does the closed workflow when a query makes the worker replay its history.
      const replayed = await svc.api.gateway.snapshot(run.id, Number.MAX_SAFE_INTEGER);
      assert.ok(replayed, 'the closed workflow answers the query');
      assert.deepEqual(replayed.output, run.output);
      assert.equal(replayed.total_cost, run.total_cost);

      // Cost: start fee plus 5 priced llm calls (text, json, list, and a list per each of 2 rows).
      assert.ok(Math.abs(run.total_cost - (START_FEE_USD + 5 * LLM_CALL_USD)) < 1e-9, `total_cost ${run.total_cost}`);
    });

    it('fails only the batch row the provider refuses (400), keeping the order', async () => {
      const { key } = await newAccount(svc.store.collections);
      const doc = {
        slug: 'refused-row',
        nodes: [
          { id: 'rows', type: 'batch', rows: ['row-0', 'row-1', 'row-2 status:400', 'row-3', 'row-4'] },
          { id: 'ask', type: 'llm', model: 'gpt-test', prompt: 'Summarize {{row}}' },
          { id: 'out', type: 'user_result', label: 'Summaries' },
          { id: 'tag', type: 'text', template: '[{{s}}]' },
          { id: 'tagged', type: 'user_result', label: 'Tagged' },
          { id: 'all', type: 'join' },
          { id: 'joined', type: 'user_result', label: 'Joined' },
        ],
        edges: [
          { from: 'rows', to: 'ask', port: 'row' },
          { from: 'ask', to: 'out' },
          { from: 'ask', to: 'tag', port: 's' },
          { from: 'tag', to: 'tagged' },
          { from: 'ask', to: 'all' },
          { from: 'all', to: 'joined' },
        ],
      };
      const run = await runToEnd(svc, key, doc);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assertItemShape(run);
      const items = run.output.summaries;
      assert.equal(items.length, 5);
      assert.deepEqual(items.map((i: any) => i.status), ['completed', 'completed', 'failed', 'completed', 'completed']);
      assert.deepEqual(texts(items), ['echo: Summarize row-0', 'echo: Summarize row-1', undefined, 'echo: Summarize row-3', 'echo: Summarize row-4']);
      const bad = items[2];
      assert.deepEqual(bad.parts, []);
      assert.equal(bad.error.code, 400);
      assert.match(bad.error.message, /The model refused: status 400/);
      assert.equal(fake.requestsWith('row-2 status:400').length, 1, 'a 400 is not retried');
      // Downstream, the failed item keeps its place and its error names the upstream node and item.
      const tagged = run.output.tagged;
      assert.deepEqual(tagged.map((i: any) => i.status), ['completed', 'completed', 'failed', 'completed', 'completed']);
      assert.equal(tagged[4].parts[0].text, '[echo: Summarize row-4]');
      assert.match(tagged[2].error.message, /'ask'/);
      assert.match(tagged[2].error.message, /item 2/);
      assert.match(tagged[2].error.message, /The model refused/);
      // A join over a list with a failed item yields one failed item naming it.
      assert.equal(run.output.joined.length, 1);
      assert.equal(run.output.joined[0].status, 'failed');
      assert.match(run.output.joined[0].error.message, /item 2 from node 'ask'/);
    });

    it('retries a provider 503 and succeeds', async () => {
      const { key } = await newAccount(svc.store.collections);
      const tag = `t${Date.now()}`;
      const doc = {
        slug: 'flaky-provider',
        nodes: [
          { id: 'ask', type: 'llm', model: 'gpt-test', prompt: `Hello flaky:${tag}:2` },
          { id: 'out', type: 'user_result', label: 'Answer' },
        ],
        edges: [{ from: 'ask', to: 'out' }],
      };
      const run = await runToEnd(svc, key, doc);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.deepEqual(texts(run.output.answer), [`echo: Hello flaky:${tag}:2`]);
      assert.equal(fake.requestsWith(`flaky:${tag}:`).length, 3);
      // Only the successful call is billed.
      assert.ok(Math.abs(run.total_cost - (START_FEE_USD + LLM_CALL_USD)) < 1e-9, `total_cost ${run.total_cost}`);
    });

    it('fails the run naming the node when inputs of an item node have unequal lengths', async () => {
      const { key } = await newAccount(svc.store.collections);
      const doc = {
        slug: 'unequal-zip',
        nodes: [
          { id: 'a', type: 'batch', rows: ['x', 'y', 'z'] },
          { id: 'b', type: 'batch', rows: ['1', '2'] },
          { id: 'zip', type: 'text', template: '{{left}}-{{right}}' },
          { id: 'out', type: 'user_result', label: 'Pairs' },
        ],
        edges: [
          { from: 'a', to: 'zip', port: 'left' },
          { from: 'b', to: 'zip', port: 'right' },
          { from: 'zip', to: 'out' },
        ],
      };
      const run = await runToEnd(svc, key, doc);
      assert.equal(run.status, 'failed', JSON.stringify(run));
      assert.equal(run.output, null);
      assert.match(run.error, /'zip'/);
      assert.match(run.error, /unequal lengths/);
      assert.match(run.error, /left: 3/);
      assert.match(run.error, /right: 2/);
      assert.ok(typeof run.completed_at === 'string');
    });

    it('debits the run exactly once in the ledger, and finalizing again changes nothing', async () => {
      const { collections } = svc.store;
      const { key, accountId } = await newAccount(collections, 10);
      const before = await accountBalance(collections, accountId);
      const doc = {
        slug: 'billed',
        nodes: [
          { id: 'rows', type: 'batch', rows: ['a', 'b'] },
          { id: 'ask', type: 'llm', model: 'gpt-test', prompt: 'Price {{row}}' },
          { id: 'out', type: 'user_result', label: 'Out' },
        ],
        edges: [
          { from: 'rows', to: 'ask', port: 'row' },
          { from: 'ask', to: 'out' },
        ],
      };
      const run = await runToEnd(svc, key, doc);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      const expected = START_FEE_USD + 2 * LLM_CALL_USD;
      assert.ok(Math.abs(run.total_cost - expected) < 1e-9, `total_cost ${run.total_cost}, expected ${expected}`);

      const snapshotState = async () => ({
        entries: await collections.ledger.find({ run_id: run.id }).toArray(),
        balance: await accountBalance(collections, accountId),
        record: (await findRunRecord(collections, run.id))!,
      });
      // The debit lands just after the record is finalized (same activity, next step): wait for it.
      const first = await waitFor(async () => {
        const state = await snapshotState();
        return state.entries.length > 0 ? state : undefined;
      });
      assert.equal(first.entries.length, 1, JSON.stringify(first.entries));
      const [entry] = first.entries;
      assert.equal(entry.kind, 'run');
      assert.equal(entry.account_id, accountId);
      assert.equal(entry.amount_usd, -run.total_cost);
      assert.ok(Math.abs(before - first.balance - run.total_cost) < 1e-9, `balance ${before} → ${first.balance}`);
      assert.equal(first.record.finalized, true);

      // The finalize activity again, as a Temporal retry would run it, with the same final.
      const activities = createActivities({ collections, config: svc.config });
      const final: RunFinal = {
        runId: run.id,
        accountId,
        status: first.record.status as RunFinal['status'],
        output: first.record.output,
        error: first.record.error,
        totalCost: first.record.total_cost!,
        completedAtMs: first.record.completed_at!.getTime(),
        events: first.record.events!,
      };
      await activities.finalizeRun(final);
      await activities.finalizeRun(final);
      // Even a different final (a replay that disagreed) cannot write or debit a second time.
      await activities.finalizeRun({ ...final, status: 'failed', output: null, error: 'late', totalCost: 5, completedAtMs: Date.now() });
      assert.deepEqual(await snapshotState(), first);
      const reread = await call(svc.url, 'GET', `/api/v1/runs/${run.id}`, { key });
      assert.deepEqual(reread.body, run);
    });

    it("answers 404 not_found_error to another account's key", async () => {
      const owner = await newAccount(svc.store.collections);
      const other = await newAccount(svc.store.collections);
      const doc = {
        slug: 'private-run',
        nodes: [
          { id: 'say', type: 'text', template: 'secret' },
          { id: 'out', type: 'user_result', label: 'Out' },
        ],
        edges: [{ from: 'say', to: 'out' }],
      };
      await publish(svc.url, owner.key, doc);
      const runId = await startRun(svc, owner.key, doc.slug);
      // While it may still be live ...
      expectError(await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key: other.key }), { status: 404, type: 'not_found_error' });
      const run = await waitForRun(svc.url, owner.key, runId);
      assert.equal(run.status, 'completed');
      // ... and once it is finished.
      const res = await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key: other.key });
      const error = expectError(res, { status: 404, type: 'not_found_error', code: 'not_found' });
      assert.doesNotMatch(JSON.stringify(error), /secret/);
    });
  });

  describe('with NODE_MAX_ATTEMPTS=2', () => {
    let svc: TestService;
    before(async () => {
      svc = await startService({ env: { OPENAI_BASE_URL: fake.baseUrl, PRICES, NODE_MAX_ATTEMPTS: '2' } });
    });
    after(async () => svc?.close());

    it('fails the run naming the node when a provider keeps answering 503', async () => {
      const { key } = await newAccount(svc.store.collections);
      const marker = `down-${Date.now()}`;
      const doc = {
        slug: 'provider-down',
        nodes: [
          { id: 'ask_model', type: 'llm', model: 'gpt-test', prompt: `${marker} status:503` },
          { id: 'out', type: 'user_result', label: 'Answer' },
        ],
        edges: [{ from: 'ask_model', to: 'out' }],
      };
      const run = await runToEnd(svc, key, doc);
      assert.equal(run.status, 'failed', JSON.stringify(run));
      assert.equal(run.output, null);
      assert.match(run.error, /'ask_model'/);
      assert.match(run.error, /503/);
      assert.match(run.error, /2 attempt/);
      assert.equal(fake.requestsWith(marker).length, 2);
    });
  });

  describe('worker lifecycle and Temporal retention', () => {
    let svc: TestService;
    const doc = {
      slug: 'lifecycle',
      nodes: [
        { id: 'name', type: 'user_input', label: 'Name', input_type: 'text' },
        { id: 'greet', type: 'text', template: 'Hello, {{name}}!' },
        { id: 'out', type: 'user_result', label: 'Greeting' },
      ],
      edges: [
        { from: 'name', to: 'greet', port: 'name' },
        { from: 'greet', to: 'out' },
      ],
    };
    before(async () => {
      svc = await startService({ worker: false });
    });
    after(async () => svc?.close());

    it('answers pending quickly while no worker runs, then completes once one starts', async () => {
      const { key } = await newAccount(svc.store.collections);
      await publish(svc.url, key, doc);
      const runId = await startRun(svc, key, doc.slug, { name: 'Ada' });
      for (let i = 0; i < 2; i++) {
        const t0 = Date.now();
        const res = await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
        const took = Date.now() - t0;
        assert.ok(took < 5_000, `GET took ${took} ms`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.equal(res.body.status, 'pending');
        assert.equal(res.body.output, null);
        assert.equal(res.body.completed_at, null);
      }
      await svc.startWorker();
      const run = await waitForRun(svc.url, key, runId);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.deepEqual(texts(run.output.greeting), ['Hello, Ada!']);
    });

    it('serves the full record after Temporal forgot the run and no worker runs', async () => {
      await svc.startWorker();
      const { key } = await newAccount(svc.store.collections);
      await publish(svc.url, key, doc);
      const runId = await startRun(svc, key, doc.slug, { name: 'Grace' });
      const run = await waitForRun(svc.url, key, runId);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      // The run shows completed as soon as its state says so; wait until its workflow has closed
      // (the finalize activity reported back) before Temporal is made to forget it.
      const client = temporalClient(svc);
      await client.workflow.getHandle(runId).result();
      assert.equal((await svc.store.collections.runs.findOne({ _id: runId }))?.finalized, true);
      await client.workflowService.deleteWorkflowExecution({ namespace: svc.config.temporal.namespace, workflowExecution: { workflowId: runId } });
      await waitFor(
        async () => {
          try {
            await client.workflow.getHandle(runId).describe();
            return undefined;
          } catch (err) {
            if (err instanceof WorkflowNotFoundError) return true;
            throw err;
          }
        },
        // Deleting a closed execution waits on Temporal's queue ack levels: 20-35 s on the dev server's defaults.
        { timeoutMs: 90_000, intervalMs: 250, what: 'Temporal to forget the run' },
      );
      await svc.stopWorker();

      const t0 = Date.now();
      const res = await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
      assert.ok(Date.now() - t0 < 5_000, 'GET must not wait on Temporal');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, run);
      assert.deepEqual(texts(res.body.output.greeting), ['Hello, Grace!']);
      assert.equal(res.body.total_cost, START_FEE_USD);
      assert.equal(typeof res.body.completed_at, 'string');
    });
  });
});
