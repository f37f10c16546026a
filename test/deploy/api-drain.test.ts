/**
 * The API's SIGTERM drain (docs/deploy.md "Draining"), on the production entry (api/main.ts) as a
 * child process behind a load balancer that follows /readyz, as the Compose proxy does. With
 * streams open (the TypeScript and the Python client, and a raw SSE client), an upload in flight
 * and a `Prefer: wait` start waiting: readiness fails at once while the process still serves, the
 * waiting start answers 202 at once, the listener closes after API_SHUTDOWN_DELAY_MS, the upload
 * that was in flight completes after that, every stream ends with the reconnect comment and no
 * `[DONE]`, every client resumes on the second API process with Last-Event-ID and gets every
 * event of its run exactly once, and the process exits 0 within the delay and grace. An upload
 * that never ends is cut when the grace is over, and the process still exits 0, on time.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { WrsClient } from '../../clients/typescript';
import { RECONNECT } from '../../api/stream/sse';
import { DRAIN_CLOSE_MARGIN_MS } from '../../api/drain';
import { ensurePythonClientEnv } from '../../tools/stack/python-tools';
import { startApiProcess, type ApiProcess } from '../support/api-process';
import { batchWorkflow, publish } from '../support/fixtures';
import { call, readResponse, waitFor } from '../support/http';
import { startReadyProxy, type ReadyProxy } from '../support/ready-proxy';
import { startRun, storedLog } from '../support/runs';
import { events, openSse } from '../support/sse';
import { useService } from '../support/use-service';

const DELAY_MS = 1_500;
const GRACE_MS = 20_000;
const TS_STREAMS = 6;
/** The tag of the provider call that keeps every run of the first test going until it is released. */
const HOLD = 'drain-runs';
const CLIENT_SRC = path.join(__dirname, '..', '..', 'clients', 'python', 'src');
// Streams the run to its end with the package's own resume logic, one event per line.
const PYTHON_STREAM = `
import json, sys
from wrs_client import WrsClient
with WrsClient(sys.argv[1], sys.argv[2]) as client:
    for event in client.stream("drain", reconnect_delay=0.1):
        print(json.dumps(event), flush=True)
`;

/** Resolves once a TCP connection to `port` is refused: the listener is closed. */
function refused(port: number): Promise<boolean | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (err: NodeJS.ErrnoException) =>
      resolve(err.code === 'ECONNREFUSED' ? true : undefined),
    );
  });
}

describe('API drain on SIGTERM (api/main.ts)', function () {
  this.timeout(180_000);
  const ctx = useService({ fakeOpenAI: true });
  let api: ApiProcess;
  let proxy: ReadyProxy;
  let python: string;

  before(async () => {
    python = await ensurePythonClientEnv();
    // Four provider calls in parallel, the last held until the drain is checked: every run is
    // mid-way at SIGTERM however slowly the clients got there (a timer of 6.5 s once ran out first).
    await publish(
      ctx.svc.url,
      ctx.key,
      batchWorkflow('drain', ['slow:1000 a', 'slow:2500 b', 'slow:4500 c', `hold:${HOLD} d`]),
    );
    api = await startApiProcess(ctx.svc.config, {
      env: { API_SHUTDOWN_DELAY_MS: String(DELAY_MS), API_SHUTDOWN_GRACE_MS: String(GRACE_MS) },
    });
    // The process under test first; the test service's API is the one clients move on to.
    proxy = await startReadyProxy([api.url, ctx.svc.url]);
  });
  after(async () => {
    await api?.kill();
    await proxy?.close();
  });

  it('fails readiness, finishes requests in flight, ends streams so clients resume elsewhere, exits 0', async () => {
    // --- streams, all opened on the process under test (the only one the proxy calls ready) ---
    const client = new WrsClient({ baseUrl: proxy.url, apiKey: ctx.key });
    const tsEvents: any[][] = [];
    const tsDone = Array.from({ length: TS_STREAMS }, async (_, i) => {
      const got: any[] = (tsEvents[i] = []);
      for await (const event of client.stream({ workflowId: 'drain' }, { reconnectDelayMs: 100 }))
        got.push(event);
      return got;
    });
    const py = spawn(python, ['-c', PYTHON_STREAM, proxy.url, ctx.key], {
      env: { PATH: process.env.PATH, PYTHONPATH: CLIENT_SRC },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let pyOut = '';
    let pyErr = '';
    py.stdout.on('data', (c: Buffer) => (pyOut += c.toString('utf8')));
    py.stderr.on('data', (c: Buffer) => (pyErr += c.toString('utf8')));
    const pyExit = new Promise<number | null>((resolve) => py.once('close', resolve));
    const pyEvents = () =>
      pyOut
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line));
    const raw = await openSse(`${api.url}/api/v1/responses`, {
      method: 'POST',
      key: ctx.key,
      body: { workflowId: 'drain', stream: true },
    });
    const rawRunId = (await raw.until((f) => f.event?.type === 'response.created')).event.response
      .run_id;
    // Every stream is mid-run: its first item is done, the run goes on for seconds.
    const itemDone = (list: any[]) => list.some((e) => e.type === 'response.output_item.done');
    await raw.until((f) => f.event?.type === 'response.output_item.done');
    await waitFor(
      async () => (tsEvents.every(itemDone) && itemDone(pyEvents()) ? true : undefined),
      {
        timeoutMs: 30_000,
        what: `every client's first item (python: ${pyErr})`,
      },
    );
    assert.ok(proxy.routed[0] >= TS_STREAMS + 1, JSON.stringify(proxy.routed));
    assert.equal(proxy.routed[1], 0);

    // --- requests in flight: an upload half sent, and a start waiting for its run's end (D28) ---
    const upload = http.request(`${api.url}/api/v1/files?name=drain.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'text/plain' },
    });
    const uploaded = new Promise<Awaited<ReturnType<typeof readResponse>>>((resolve, reject) => {
      upload.once('response', (res) => void readResponse(res).then(resolve, reject));
      upload.once('error', reject);
    });
    upload.write('a'.repeat(64 * 1024));
    const waiting = startRun(
      api.url,
      ctx.key,
      'drain',
      {},
      { headers: { Prefer: 'wait=60' }, body: { metadata: { drain: 'waiting' } } },
    ).then((id) => ({ id, at: Date.now() }));
    await waitFor(
      async () =>
        (await ctx.svc.store.collections.runs.findOne({ metadata_tags: 'drain=waiting' }))
          ? true
          : undefined,
      { what: 'the waiting start' },
    );

    // --- SIGTERM ---
    const exited = new Promise<number | null>((resolve) => api.child.once('exit', resolve));
    const sigterm = Date.now();
    api.child.kill('SIGTERM');

    // Out of rotation first, still serving: /readyz answers 503 on a new connection.
    const ready = await waitFor(
      async () => {
        const res = await call(api.url, 'GET', '/readyz', { headers: { connection: 'close' } });
        return res.status === 503 ? res : undefined;
      },
      { what: '/readyz 503' },
    );
    assert.equal(ready.body.error.code, 'service_unavailable');
    // The waiting start does not hold the drain: it answers its 202 at once, long before its run ends.
    const answered = await waiting;
    const waitingRun = await ctx.svc.store.collections.runs.findOne({ _id: answered.id });
    assert.ok(!waitingRun?.finalized, 'the run had not ended when the 202 came');

    // Then the listener closes: not before the delay.
    await waitFor(() => refused(api.port), { what: 'the listener to close', timeoutMs: 20_000 });
    const listenerClosed = Date.now() - sigterm;
    assert.ok(listenerClosed >= DELAY_MS, `the listener closed after ${listenerClosed} ms`);
    assert.ok(
      answered.at - sigterm < listenerClosed,
      'the waiting start answered within the delay',
    );

    // The upload that was in flight completes on the closed listener's open connection.
    upload.end('b'.repeat(64 * 1024));
    const file = await uploaded;
    assert.equal(file.status, 201, JSON.stringify(file.body));
    assert.equal(file.body.size, 128 * 1024);
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/files/${file.body.id}`, { key: ctx.key })).status,
      200,
    );

    // --- the process exits 0 within the delay and the grace ---
    assert.equal(await exited, 0, api.output());
    const drainMs = Date.now() - sigterm;
    assert.ok(drainMs < DELAY_MS + GRACE_MS, `drained in ${drainMs} ms`);
    const drained = api
      .output()
      .split('\n')
      .filter((line) => line.includes('"API drained"'))
      .map((line) => JSON.parse(line))[0];
    assert.ok(drained, api.output());
    assert.equal(drained.cut, 0, 'no request was cut');
    assert.ok(drained.streams >= TS_STREAMS + 2, JSON.stringify(drained));
    ctx.fake.release(HOLD); // the runs may end now, their clients resumed on the other process

    // --- the raw stream: the reconnect comment, a clean end, no [DONE]; resumed on the other process ---
    await raw.closed;
    assert.equal(raw.frames.at(-1)!.comment, RECONNECT.slice(1).trim());
    assert.ok(!raw.frames.some((f) => f.data === '[DONE]'));
    const lastId = raw.frames.filter((f) => f.id !== undefined).at(-1)!.id!;
    const resumed = await openSse(`${proxy.url}/api/v1/runs/${rawRunId}/stream`, {
      key: ctx.key,
      headers: { 'Last-Event-ID': lastId },
    });
    await resumed.closed;
    assert.equal(resumed.frames.at(-1)!.data, '[DONE]');

    // --- every client: each event of its run exactly once, as the run record has them ---
    const ts = await Promise.all(tsDone);
    assert.equal(await pyExit, 0, pyErr);
    const streams = [...ts, pyEvents(), [...events(raw), ...events(resumed).slice(1)]];
    for (const got of streams) {
      const runId = got[0].response.run_id;
      const log = await storedLog(ctx.svc.store.collections, runId);
      assert.equal(log.at(-1)!.type, 'response.completed');
      assert.deepEqual(got, log);
    }
    // Each client of the proxy reconnected once, to the other process.
    assert.ok(proxy.routed[1] >= TS_STREAMS + 2, JSON.stringify(proxy.routed));
    console.log(
      `      drain: listener closed after ${listenerClosed} ms, exit 0 after ${drainMs} ms; ` +
        `${streams.length} streams resumed; in flight at close ${drained.inFlight}, cut ${drained.cut}`,
    );
  });

  it('cuts what is still unfinished when the grace is over and exits 0: a client cannot hold the shutdown', async () => {
    const grace = 1_000;
    const short = await startApiProcess(ctx.svc.config, {
      env: { API_SHUTDOWN_DELAY_MS: '0', API_SHUTDOWN_GRACE_MS: String(grace) },
    });
    try {
      // An upload that never ends, in flight for sure: its first GridFS chunk is stored.
      const chunks = ctx.svc.store.db.collection('files.chunks');
      const before = await chunks.countDocuments();
      const upload = http.request(`${short.url}/api/v1/files?name=stuck.bin`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/octet-stream' },
      });
      const outcome = new Promise<string>((resolve) => {
        upload.once('response', (res) => resolve(`answered ${res.statusCode}`));
        upload.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      });
      upload.write(Buffer.alloc(512 * 1024, 1));
      await waitFor(async () => ((await chunks.countDocuments()) > before ? true : undefined), {
        what: "the upload's first chunk",
      });
      const exited = new Promise<number | null>((resolve) => short.child.once('exit', resolve));
      const sigterm = Date.now();
      short.child.kill('SIGTERM');
      assert.equal(await exited, 0, short.output());
      const ms = Date.now() - sigterm;
      assert.ok(ms >= grace, `exited after ${ms} ms, not before the grace`);
      assert.ok(ms < grace + DRAIN_CLOSE_MARGIN_MS, `exited after ${ms} ms`);
      assert.equal(await outcome, 'ECONNRESET');
      const drained = JSON.parse(
        short
          .output()
          .split('\n')
          .find((line) => line.includes('"API drained"'))!,
      );
      assert.equal(drained.inFlight, 1);
      assert.equal(drained.cut, 1);
    } finally {
      await short.kill();
    }
  });
});
