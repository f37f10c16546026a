/**
 * The API process dies (SIGKILL: no graceful close, no last write) while 20 clients are
 * in the middle of their streams. Each client does what the spec tells it to (rule 2): it keeps
 * trying GET /api/v1/runs/{id}/stream with `Last-Event-ID` = the last `id:` it received until an
 * API answers — here a new process on the same port, as behind a load balancer. The runs go on in
 * the worker meanwhile (in this process; the API is the child process), and some of them end
 * while no API is up, so their reconnect gets the terminal event at once (rule 3).
 *
 * Asserted per client: the events of its first and second connection, put together (without
 * the per-connection `response.resumed`), are exactly the run's persisted event log from the
 * client's first event to the terminal one — each once, numbered without gap — and the second
 * connection opens at the client's cursor and ends with the terminal event and `[DONE]`.
 * Ten clients started their run with POST stream:true, ten attached to an async run with GET.
 */
import assert from 'node:assert/strict';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import { newAccount } from '../support/accounts';
import { startApiProcess, type ApiProcess } from '../support/api-process';
import { startBackend, type TestBackend } from '../support/backend';
import { publish } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { events, openSse, type SseClient } from '../support/sse';
import { storedLog } from '../support/runs';

const CLIENTS = 20;
/**
 * The fake's delay per row of client i's run: its first item is done after about 1 s, and the
 * runs end one after another from about 6 s to 14 s, so the restart finds some ended and some not.
 * The first run's end leaves the twenty clients 5 s to open and see a first item (4 s was once
 * too little on a loaded CI machine).
 */
const delaysOf = (i: number) => [800, 3_000, 6_000 + 400 * i];
const TERMINAL = new Set(['response.completed', 'response.failed', 'response.cancelled']);

const batchWorkflow = {
  slug: 'stream-crash',
  nodes: [
    { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'json' },
    { id: 'split', type: 'batch' },
    { id: 'ask', type: 'llm', model: 'gpt-test', prompt: '{{row}}' },
    { id: 'out', type: 'user_result', label: 'Answers' },
  ],
  edges: [
    { from: 'rows', to: 'split', port: 'rows' },
    { from: 'split', to: 'ask', port: 'row' },
    { from: 'ask', to: 'out' },
  ],
};

interface Client {
  runId: string;
  /** The first sequence number this client asked for: 0 for a POST stream, 1 after attaching with cursor 0. */
  from: number;
  first: SseClient;
  second?: SseClient;
  /** Connection attempts until an API answered the reconnect. */
  attempts: number;
}

/** The `id:` of the last complete frame that had one: the client's cursor. */
function lastId(stream: SseClient): string {
  const id = stream.frames.filter((f) => f.id !== undefined).at(-1)?.id;
  assert.ok(id !== undefined, 'the stream delivered at least one event');
  return id;
}

describe('reliability: API killed with 20 streams open', function () {
  this.timeout(180_000);
  let backend: TestBackend;
  let fake: FakeOpenAI;
  const apis: ApiProcess[] = [];
  const clients: Client[] = [];
  /** Set when the test is over, so no reconnect loop outlives it (a failed test leaves them waiting). */
  let finished = false;

  before(async () => {
    fake = await startFakeOpenAI();
    backend = await startBackend({
      env: {
        OPENAI_BASE_URL: fake.baseUrl,
        PRICES: JSON.stringify({ 'gpt-test': { input_per_mtok: 2, output_per_mtok: 8 } }),
        STREAM_POLL_MS: '200',
        RATE_LIMIT_STARTS_PER_MINUTE: '1000',
        RATE_LIMIT_REQUESTS_PER_MINUTE: '100000',
      },
    });
    apis.push(await startApiProcess(backend.config));
  });
  after(async () => {
    finished = true;
    for (const client of clients) {
      client.first.abort();
      client.second?.abort();
    }
    for (const api of apis) await api.kill();
    await backend?.close();
    await fake?.close();
  });

  it('every client resumes on the restarted API and receives each event of its run exactly once', async () => {
    const { key } = await newAccount(backend.store.collections);
    const url = apis[0].url;
    await publish(url, key, batchWorkflow);
    const inputs = (i: number) => ({
      rows: delaysOf(i).map((ms, k) => `slow:${ms} client-${i} row-${k}`),
    });

    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        if (i % 2 === 0) {
          const first = await openSse(`${url}/api/v1/responses`, {
            method: 'POST',
            key,
            body: { workflowId: batchWorkflow.slug, stream: true, inputs: inputs(i) },
          });
          assert.equal(first.status, 200);
          const created = await first.until((f) => f.event?.type === 'response.created');
          clients.push({ runId: created.event.response.run_id, from: 0, first, attempts: 0 });
        } else {
          const res = await call(url, 'POST', '/api/v1/responses', {
            key,
            body: { workflowId: batchWorkflow.slug, inputs: inputs(i) },
          });
          assert.equal(res.status, 202, JSON.stringify(res.body));
          // Cursor 0: this client knows the run was created and wants everything after it.
          const first = await openSse(`${url}/api/v1/runs/${res.body.run_id}/stream`, {
            key,
            headers: { 'Last-Event-ID': '0' },
          });
          assert.equal(first.status, 200);
          clients.push({ runId: res.body.run_id, from: 1, first, attempts: 0 });
        }
      }),
    );

    // Mid-stream: every client has an item done, none has its terminal event yet.
    await Promise.all(
      clients.map((c) =>
        c.first.until((f) => f.event?.type === 'response.output_item.done', 30_000),
      ),
    );
    assert.ok(
      clients.every((c) => !events(c.first).some((e) => TERMINAL.has(e.type))),
      'no run had ended when the API was killed',
    );
    const killedAt = Date.now();
    await apis[0].kill();
    await Promise.all(clients.map((c) => c.first.closed));
    const eventsBeforeKill = clients.reduce((n, c) => n + events(c.first).length, 0);
    for (const c of clients)
      assert.notEqual(c.first.frames.at(-1)?.data, '[DONE]', 'a killed API sends no [DONE]');

    // Every client retries at once and keeps retrying while no API listens; the API comes back on the same port.
    const reconnects = Promise.all(
      clients.map(async (c) => {
        const cursor = lastId(c.first);
        while (!finished) {
          c.attempts++;
          try {
            c.second = await openSse(`${url}/api/v1/runs/${c.runId}/stream`, {
              key,
              headers: { 'Last-Event-ID': cursor },
            });
            return;
          } catch (err) {
            // Connection refused while no API listens: try again shortly, as a client's backoff would.
            if (!/fetch failed/.test((err as Error).message)) throw err;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      }),
    );
    // The API stays down until a few runs have ended, so those clients find their run over (rule 3).
    const runIds = clients.map((c) => c.runId);
    const endedWhileDown = await waitFor(
      async () => {
        const ended = await backend.store.collections.runs
          .find({ _id: { $in: runIds }, finalized: true }, { projection: { _id: 1 } })
          .toArray();
        return ended.length >= 3 ? ended.length : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'three runs to end while no API is up' },
    );
    apis.push(await startApiProcess(backend.config, { port: apis[0].port }));
    const restartedMs = Date.now() - killedAt;
    await reconnects;
    await Promise.all(clients.map((c) => c.second?.closed));
    const backMs = Date.now() - killedAt;

    let duplicates = 0;
    let total = 0;
    for (const c of clients) {
      const second = c.second!;
      assert.equal(second.status, 200);
      const cursor = Number(lastId(c.first));
      const [resumed, ...rest] = events(second);
      assert.equal(resumed.type, 'response.resumed');
      assert.equal(resumed.sequence_number, cursor, 'the reconnect opens at the client cursor');
      assert.equal(second.frames.at(-1)!.data, '[DONE]', `${c.runId} ends with [DONE]`);
      assert.ok(TERMINAL.has(rest.at(-1)?.type), `${c.runId} ends with its terminal event`);

      const received = [...events(c.first).filter((e) => e.type !== 'response.resumed'), ...rest];
      const seqs = received.map((e) => e.sequence_number as number);
      duplicates += seqs.length - new Set(seqs).size;
      total += received.length;
      const log = await storedLog(backend.store.collections, c.runId);
      assert.equal(log.at(-1)!.type, 'response.completed');
      assert.deepEqual(
        received,
        log.slice(c.from),
        `${c.runId}: every event of the log from ${c.from}, once, in order`,
      );
      assert.deepEqual(
        seqs,
        log.slice(c.from).map((_, n) => c.from + n),
      );
    }
    assert.equal(duplicates, 0);
    const attempts = clients.reduce((n, c) => n + c.attempts, 0);

    console.log(
      `      ${CLIENTS} streams, ${eventsBeforeKill} events before the kill; API listening again ${restartedMs} ms after the kill, ` +
        `${attempts} connection attempts (${CLIENTS} answered), all [DONE] ${backMs} ms after the kill; ` +
        `${total} events received, 0 duplicates, 0 gaps; ${endedWhileDown} runs had ended when the API came back`,
    );
  });
});
