// SSE on start and on reattach, with exact resume (spec "Events", D11–D15).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { greetingWorkflow, publish } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { events, openSse, type SseClient } from '../../support/sse';
import { RETRY_MS } from '../../../api/stream/sse';
import { useService } from '../../support/use-service';
import { storedLog } from '../../support/runs';

const POLL_MS = 1_000;

const hello = greetingWorkflow('hello');

/** rows → llm per row → result; `prompt` lets each test choose the fake's behaviour. */
const slowBatch = (slug: string, rows: string[]) => ({
  slug,
  nodes: [
    { id: 'rows', type: 'batch', rows },
    { id: 'ask', type: 'llm', model: 'gpt-test', prompt: '{{row}}' },
    { id: 'out', type: 'user_result', label: 'Answers' },
  ],
  edges: [
    { from: 'rows', to: 'ask', port: 'row' },
    { from: 'ask', to: 'out' },
  ],
});

/** Two lists of unequal length zipped by a text node: the node cannot run, so the run fails (D9). */
const unequal = {
  slug: 'unequal',
  nodes: [
    { id: 'a', type: 'batch', rows: ['1', '2'] },
    { id: 'b', type: 'batch', rows: ['1', '2', '3'] },
    { id: 'zip', type: 'text', template: '{{a}}{{b}}' },
    { id: 'out', type: 'user_result', label: 'Out' },
  ],
  edges: [
    { from: 'a', to: 'zip', port: 'a' },
    { from: 'b', to: 'zip', port: 'b' },
    { from: 'zip', to: 'out' },
  ],
};

describe('streams (D11–D15)', function () {
  this.timeout(60_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: { STREAM_KEEPALIVE_MS: '200', STREAM_POLL_MS: String(POLL_MS) },
  });
  const open: SseClient[] = [];

  before(async () => {
    for (const doc of [
      hello,
      unequal,
      slowBatch('slow3', ['slow:700 a', 'slow:700 b', 'slow:700 c']),
      slowBatch('slow1', ['slow:2500 x']),
      slowBatch('held1', ['hold:live-cursor x']),
    ]) {
      const res = await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key: ctx.key, body: doc });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
  });
  afterEach(() => {
    for (const client of open.splice(0)) client.abort();
  });

  const startStream = async (workflowId: string, inputs?: object) => {
    const client = await openSse(`${ctx.svc.url}/api/v1/responses`, {
      method: 'POST',
      key: ctx.key,
      body: { workflowId, stream: true, inputs },
    });
    open.push(client);
    return client;
  };
  const attach = async (runId: string, headers: Record<string, string> = {}, query = '') => {
    const client = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream${query}`, {
      key: ctx.key,
      headers,
    });
    open.push(client);
    return client;
  };
  const storedEvents = async (runId: string) =>
    (await storedLog(ctx.svc.store.collections, runId)) as any[];
  /** The exact bytes a stream of these log events must be. */
  const framed = (log: object[]) =>
    `retry: ${RETRY_MS}\n` +
    log.map((e: any) => `id: ${e.sequence_number}\ndata: ${JSON.stringify(e)}\n\n`).join('') +
    'data: [DONE]\n\n';

  it('streams a completed run byte for byte, ends with [DONE] and closes', async () => {
    const client = await startStream('hello', { name: 'Ada' });
    assert.equal(client.status, 200);
    assert.match(client.headers.get('content-type')!, /^text\/event-stream/);
    assert.equal(client.headers.get('cache-control'), 'no-store, no-transform');
    assert.equal(client.headers.get('access-control-allow-origin'), '*');
    await client.closed; // the server closes after [DONE]
    const [first] = events(client);
    assert.equal(first.type, 'response.created');
    assert.equal(first.response.id, first.response.run_id); // D12
    assert.equal(typeof first.response.created_at, 'number');
    assert.equal(first.response.service_tier, null);
    const log = await storedEvents(first.response.run_id);
    const data = client.raw().replace(/: keepalive\n\n/g, '');
    assert.equal(data, framed(log));
    assert.deepEqual(
      log.map((e: any) => e.type),
      [
        'response.created',
        'response.output_item.added',
        'response.output_item.done',
        'response.completed',
      ],
    );
    const run = await call(ctx.svc.url, 'GET', `/api/v1/runs/${first.response.run_id}`, {
      key: ctx.key,
    });
    assert.equal(log[1].item.id, run.body.output.greeting[0].id); // D13: item.id is the record's item id
    assert.deepEqual(log[3].response, { usage: null, service_tier: null });
  });

  it('closes the connection after [DONE] when the client asked (Connection: close)', async () => {
    const client = await startStream('hello', { name: 'Ada' });
    await client.closed;
    const runId = events(client)[0].response.run_id;
    const { hostname, port } = new URL(ctx.svc.url);
    const socket = net.connect(Number(port), hostname);
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
    socket.write(
      `GET /api/v1/runs/${runId}/stream HTTP/1.1\r\nHost: ${hostname}\r\n` +
        `Authorization: Bearer ${ctx.key}\r\nConnection: close\r\n\r\n`,
    );
    // Before, the socket stayed open for the server's keep-alive timeout (65 s) after [DONE].
    await once(socket, 'close');
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.match(answer, /\r\nConnection: close\r\n/i);
    assert.match(answer, /data: \[DONE\]/);
  });

  it('streams a failed run: response.failed with the error message, then [DONE]', async () => {
    const client = await startStream('unequal');
    await client.closed;
    const log = events(client);
    const last = log.at(-1);
    assert.equal(last.type, 'response.failed');
    assert.match(last.response.error.message, /node 'zip'.*unequal lengths/);
    assert.deepEqual(last.response.incomplete_details, { reason: 'error' });
    assert.equal(last.response.error.code, null);
    assert.equal(client.frames.at(-1)!.data, '[DONE]');
    assert.equal(
      client.raw().replace(/: keepalive\n\n/g, ''),
      framed(await storedEvents(log[0].response.run_id)),
    );
  });

  it('streams a batch run: one added/done pair per item, output_index in order added', async () => {
    const client = await startStream('slow3');
    await client.closed;
    const log = events(client);
    const runId = log[0].response.run_id;
    assert.equal(client.raw().replace(/: keepalive\n\n/g, ''), framed(await storedEvents(runId)));
    const added = log.filter((e) => e.type === 'response.output_item.added');
    const done = log.filter((e) => e.type === 'response.output_item.done');
    assert.equal(added.length, 3);
    assert.equal(done.length, 3);
    assert.deepEqual(
      added.map((e) => e.output_index),
      [0, 1, 2],
    );
    assert.deepEqual(new Set(done.map((e) => e.item.id)), new Set(added.map((e) => e.item.id)));
    for (const e of added) assert.deepEqual(Object.keys(e.item), ['type', 'id', 'phase']);
    assert.deepEqual(
      log.map((e) => e.sequence_number),
      log.map((_, i) => i),
    );
    const run = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.deepEqual(
      run.body.output.answers.map((i: any) => i.id).sort(),
      added.map((e) => e.item.id).sort(),
    );
  });

  it('sends keepalive comments at the configured interval', async () => {
    const client = await startStream('slow1');
    const keepalive = await client.until((f) => f.comment === 'keepalive');
    assert.ok(keepalive);
    assert.match(client.raw(), /\n\n: keepalive\n\n/);
  });

  it('reattaches to a running run: response.resumed with the status, then the rest', async () => {
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'slow3' },
    });
    const runId = start.body.run_id;
    const client = await attach(runId);
    // Keepalives may come first while the run's state is not known yet (D15: no stale `pending`).
    const first = await client.until((f) => f.event !== undefined);
    assert.equal(first.event.type, 'response.resumed');
    assert.equal(first.event.response.run_id, runId);
    assert.ok(['pending', 'running'].includes(first.event.response.status));
    assert.equal(first.id, String(first.event.sequence_number));
    await client.closed;
    const log = events(client);
    assert.equal(log.at(-1).type, 'response.completed');
    // Without a cursor the stream carries what happens from attach on: contiguous numbers after the resumed one.
    const numbers = log.slice(1).map((e) => e.sequence_number);
    assert.deepEqual(
      numbers,
      numbers.map((_, i) => first.event.sequence_number + 1 + i),
    );
  });

  it('reattaches to a terminal run: the terminal event comes on the next poll tick (rule 3), then [DONE]', async () => {
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'hello', inputs: { name: 'B' } },
    });
    const runId = start.body.run_id;
    await storedEvents(runId);
    const client = await attach(runId);
    await client.closed;
    const [resumed, terminal] = client.frames.filter((f) => f.event);
    assert.equal(resumed.event.type, 'response.resumed');
    assert.equal(resumed.event.response.status, 'completed');
    assert.equal(terminal.event.type, 'response.completed');
    assert.equal(client.frames.filter((f) => f.event).length, 2);
    const delay = terminal.at - resumed.at;
    assert.ok(delay >= POLL_MS * 0.5 && delay <= POLL_MS * 3, `terminal after ${delay} ms`);
    assert.equal(client.frames.at(-1)!.data, '[DONE]');
  });

  it('resumes after a drop with Last-Event-ID (and starting_after): every event exactly once, in order', async () => {
    const first = await startStream('slow3');
    const created = await first.until((f) => f.event?.type === 'response.created');
    const runId = created.event.response.run_id;
    const lastSeen = await first.until((f) => f.event?.type === 'response.output_item.done');
    first.abort();
    const before = first.frames
      .filter((f) => f.event && Number(f.id) <= Number(lastSeen.id))
      .map((f) => f.event);
    const second = await attach(runId, { 'Last-Event-ID': lastSeen.id! });
    await second.closed;
    const [resumed, ...after] = events(second);
    assert.equal(resumed.type, 'response.resumed');
    assert.equal(resumed.sequence_number, Number(lastSeen.id));
    const stitched = [...before, ...after];
    const log = await storedEvents(runId);
    assert.deepEqual(stitched, log); // no gap, no duplicate, same bytes
    const third = await attach(runId, {}, `?starting_after=${lastSeen.id}`);
    await third.closed;
    assert.deepEqual(events(third).slice(1), after);
  });

  it('two clients of one run see identical sequences while one poller queries once per interval', async () => {
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'slow3' },
    });
    const runId = start.body.run_id;
    const t0 = Date.now();
    const [a, b] = await Promise.all([
      attach(runId, {}, '?starting_after=0'),
      attach(runId, {}, '?starting_after=0'),
    ]);
    await a.until(() => true);
    await b.until(() => true);
    assert.equal(ctx.svc.api.pollers.size, 1);
    const poller = ctx.svc.api.pollers.get(runId)!;
    assert.equal(poller.subscriberCount, 2);
    await Promise.all([a.closed, b.closed]);
    const queries = poller.queries;
    const seconds = (Date.now() - t0) / POLL_MS;
    assert.deepEqual(events(a), events(b));
    assert.ok(
      queries <= Math.ceil(seconds) + 1,
      `${queries} queries in ${seconds.toFixed(1)} intervals`,
    );
    await waitFor(async () => (ctx.svc.api.pollers.size === 0 ? true : undefined), {
      what: 'poller stopped',
    });
  });

  it('a client that disconnects leaves no poller behind, and the run keeps going', async () => {
    const client = await startStream('slow1');
    const created = await client.until((f) => f.event?.type === 'response.created');
    const runId = created.event.response.run_id;
    assert.equal(ctx.svc.api.pollers.get(runId)?.subscriberCount, 1);
    client.abort();
    await waitFor(async () => (ctx.svc.api.pollers.get(runId) === undefined ? true : undefined), {
      what: 'poller released',
    });
    assert.equal(ctx.svc.api.pollers.size, 0);
    const run = await waitFor(async () => {
      const r = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
      return r.body.status === 'completed' ? r.body : undefined;
    });
    assert.equal(run.output.answers.length, 1);
  });

  it('refuses before streaming with plain JSON errors', async () => {
    const badInputs = await openSse(`${ctx.svc.url}/api/v1/responses`, {
      method: 'POST',
      key: ctx.key,
      body: { workflowId: 'hello', stream: true, inputs: { nmae: 'x' } },
    });
    assert.equal(badInputs.status, 400);
    assert.equal(badInputs.json.error.code, 'invalid_input_fields');
    const noKey = await openSse(`${ctx.svc.url}/api/v1/responses`, {
      method: 'POST',
      body: { workflowId: 'hello', stream: true },
    });
    assert.equal(noKey.status, 401);
    const unknown = await openSse(
      `${ctx.svc.url}/api/v1/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/stream`,
      { key: ctx.key },
    );
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.type, 'not_found_error');
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'hello', inputs: { name: 'C' } },
    });
    const other = await ctx.newAccount();
    const foreign = await openSse(`${ctx.svc.url}/api/v1/runs/${start.body.run_id}/stream`, {
      key: other.key,
    });
    assert.equal(foreign.status, 404);
    const badCursor = await openSse(
      `${ctx.svc.url}/api/v1/runs/${start.body.run_id}/stream?starting_after=abc`,
      { key: ctx.key },
    );
    assert.equal(badCursor.status, 400);
    assert.equal(badCursor.json.error.param, 'starting_after');
    assert.equal(ctx.svc.api.pollers.size, 0);
    // Reattaching never starts or bills a run.
    const runs = await ctx.svc.store.collections.runs.countDocuments({});
    const again = await attach(start.body.run_id);
    await again.closed;
    assert.equal(await ctx.svc.store.collections.runs.countDocuments({}), runs);
  });

  describe('D11 resume rules', () => {
    it('sends `retry:` once, with the first event of a stream', async () => {
      const client = await startStream('hello', { name: 'R' });
      await client.closed;
      const retries = client.frames.filter((f) => f.retry !== undefined);
      assert.equal(retries.length, 1);
      assert.equal(
        retries[0],
        client.frames.find((f) => f.event),
      );
      assert.equal(retries[0].retry, RETRY_MS);
    });

    it('answers 204 to a cursor at the terminal event, and 400 to one beyond the last event', async () => {
      const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'hello', inputs: { name: 'T' } },
      });
      const log = await storedEvents(start.body.run_id);
      const terminal = String(log.length - 1);
      const done = await attach(start.body.run_id, { 'Last-Event-ID': terminal });
      assert.equal(done.status, 204);
      assert.equal(done.raw(), '');
      assert.equal(
        (await attach(start.body.run_id, {}, `?starting_after=${terminal}`)).status,
        204,
      );
      const beyond = await attach(start.body.run_id, { 'Last-Event-ID': '99' });
      assert.equal(beyond.status, 400);
      assert.equal(beyond.json.error.type, 'invalid_request_error');
      assert.equal(beyond.json.error.param, 'Last-Event-ID');
      assert.match(beyond.json.error.message, /beyond this run's last event \(3\)/);
      const beyondQuery = await attach(start.body.run_id, {}, `?starting_after=${log.length}`);
      assert.equal(beyondQuery.json.error.param, 'starting_after');
      // However many digits (15 and more were a 400 without a code, as if no number).
      const huge = '9'.repeat(20);
      for (const [headers, query, param] of [
        [{ 'Last-Event-ID': huge }, '', 'Last-Event-ID'],
        [{}, `?starting_after=00000000000000000000${huge}`, 'starting_after'],
      ] as const) {
        const far = await attach(start.body.run_id, headers, query);
        assert.equal(far.status, 400);
        assert.equal(far.json.error.code, 'cursor_out_of_range');
        assert.equal(far.json.error.param, param);
        assert.match(
          far.json.error.message,
          new RegExp(`is ${huge}, beyond this run's last event`),
        );
      }
      // One before the terminal event still resumes: the terminal event, then [DONE].
      const last = await attach(start.body.run_id, { 'Last-Event-ID': String(log.length - 2) });
      await last.closed;
      assert.deepEqual(events(last).slice(1), [log.at(-1)]);
      assert.equal(ctx.svc.api.pollers.size, 0);
    });

    it("judges a live run's cursor against its current log: beyond it is a 400, within it resumes", async () => {
      const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'held1' },
      });
      const runId = start.body.run_id;
      // Judged while the run is live: its one item's call is held by the fake until released below
      // (a timed item could end first on a loaded machine).
      await waitFor(
        async () => (ctx.fake.requestsWith('hold:live-cursor').length > 0 ? true : undefined),
        { what: "the held item's call" },
      );
      // 3 will be the terminal event's number (created, added, done, completed); while the item is held it is beyond the log.
      const beyond = await attach(runId, { 'Last-Event-ID': '3' });
      assert.equal(beyond.status, 400);
      assert.equal(beyond.json.error.param, 'Last-Event-ID');
      assert.equal(
        (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key })).body.status,
        'running',
        'the run was live when judged',
      );
      ctx.fake.release('live-cursor');
      const live = await attach(runId, { 'Last-Event-ID': '0' });
      await live.closed;
      const after = events(live).slice(1);
      assert.equal(after[0].sequence_number, 1);
      assert.equal(after.at(-1).type, 'response.completed');
      await waitFor(async () => (ctx.svc.api.pollers.size === 0 ? true : undefined), {
        what: 'pollers released',
      });
    });
  });
});

describe("streams: a run's end (the awaitEnd update)", function () {
  this.timeout(60_000);
  // A poll interval far longer than the test: only the wait for the run's end can end the stream.
  const ctx = useService({ fakeOpenAI: true, env: { STREAM_POLL_MS: '600000' } });

  it('ends a watching stream the moment its run ends, with the last events, not on the next poll tick', async () => {
    await publish(ctx.svc.url, ctx.key, slowBatch('slow1', ['slow:1500 x']));
    const client = await openSse(`${ctx.svc.url}/api/v1/responses`, {
      method: 'POST',
      key: ctx.key,
      body: { workflowId: 'slow1', stream: true },
    });
    try {
      await client.closed;
      assert.deepEqual(
        events(client).map((e) => [e.sequence_number, e.type]),
        [
          [0, 'response.created'],
          [1, 'response.output_item.added'],
          [2, 'response.output_item.done'],
          [3, 'response.completed'],
        ],
      );
      assert.match(client.raw(), /data: \[DONE\]\n\n$/);
    } finally {
      client.abort();
    }
  });
});
