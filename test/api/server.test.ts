/**
 * Bounded connections (docs/api.md "Connections"): a body that stalls or trickles is answered 408
 * `request_timeout` in the envelope; an answer sent before the body arrived (a 401 to an upload)
 * closes the connection, so a client trickling bytes cannot hold it; streams outlive the request
 * and idle timeouts; and one key holds at most STREAM_MAX_PER_KEY open streams in an API process
 * (429 `too_many_streams` with `Retry-After`, before a streaming start creates its run). Answers
 * Node would give outside the app (an `Expect` it cannot meet, a CONNECT) come in the envelope
 * with CORS too (D22).
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { expectError } from '../support/api-assert';
import { greetingWorkflow, publish } from '../support/fixtures';
import { call, waitFor, type ApiResponse } from '../support/http';
import { openSse, type SseClient } from '../support/sse';
import { freshWindow } from '../support/rate-window';
import { startRun } from '../support/runs';
import { useService } from '../support/use-service';

/** What a raw connection saw: the first answer (once complete), and when the server closed it. */
interface Trickle {
  answer: Promise<ApiResponse>;
  /** Resolves when the server ends or resets the connection. */
  closed: Promise<void>;
  /** Bytes of body written so far. */
  sent(): number;
  stop(): void;
}

/**
 * Sends `head`, then `first` bytes of body, then one more byte every `everyMs` (if given) until
 * the server closes the connection or `stop()`: a client that trickles its body.
 */
function trickle(url: string, head: string, first: string, everyMs?: number): Trickle {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  let sent = 0;
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    clearInterval(timer);
    socket.destroy();
  };
  socket.on('connect', () => {
    socket.write(head + first);
    sent = first.length;
    if (everyMs)
      timer = setInterval(() => {
        if (socket.writable) {
          socket.write('a');
          sent++;
        }
      }, everyMs);
  });
  const closed = new Promise<void>((resolve) => {
    socket.on('end', () => resolve());
    socket.on('close', () => resolve());
  });
  socket.on('error', () => undefined); // a reset is a way to be closed
  void closed.then(() => clearInterval(timer));
  const answer = new Promise<ApiResponse>((resolve, reject) => {
    let data = '';
    const onData = (chunk: Buffer) => {
      data += chunk.toString('utf8');
      const split = data.indexOf('\r\n\r\n');
      if (split < 0) return;
      const [statusLine, ...lines] = data.slice(0, split).split('\r\n');
      const headers = new Headers();
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      }
      const body = data.slice(split + 4);
      if (Buffer.byteLength(body) < Number(headers.get('content-length') ?? 0)) return;
      socket.off('data', onData);
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) });
    };
    socket.on('data', onData);
    void closed.then(() => reject(new Error(`closed without a complete answer: ${data}`)));
  });
  answer.catch(() => undefined); // awaited by the test that wants it
  return { answer, closed, sent: () => sent, stop };
}

/** Resolves with how long `promise` took, or fails after `ms`. */
async function within(promise: Promise<unknown>, ms: number, what: string): Promise<number> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
  return Date.now() - started;
}

describe('connections: request timeouts', function () {
  this.timeout(60_000);
  // Idle (no byte) after 800 ms; the whole request within 2 s; keepalives only every 3 s.
  const ctx = useService({
    worker: false,
    env: {
      API_HEADERS_TIMEOUT_MS: '1000',
      API_REQUEST_TIMEOUT_MS: '2000',
      API_IDLE_TIMEOUT_MS: '800',
      STREAM_KEEPALIVE_MS: '3000',
    },
  });
  let head: (path: string, length: number) => string;

  before(async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet'));
    const host = new URL(ctx.svc.url).host;
    head = (path, length) =>
      `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
  });

  it('a body that stalls is answered 408 request_timeout in the envelope and the connection is closed', async () => {
    const client = trickle(ctx.svc.url, head('/api/v1/responses', 100), '{"workflowId":');
    try {
      await within(client.answer, 10_000, 'an answer');
      const answer = await client.answer;
      expectError(answer, { status: 408, type: 'invalid_request_error', code: 'request_timeout' });
      assert.equal(answer.headers.get('connection'), 'close');
      await within(client.closed, 5_000, 'the connection closed');
    } finally {
      client.stop();
    }
  });

  it('a body that trickles (a byte every 100 ms) is answered 408 once the request timeout is over', async () => {
    const started = Date.now();
    const client = trickle(ctx.svc.url, head('/api/v1/files', 1_000_000), 'ab', 100);
    try {
      await within(client.answer, 10_000, 'an answer');
      const answer = await client.answer;
      const tookMs = Date.now() - started;
      expectError(answer, { status: 408, type: 'invalid_request_error', code: 'request_timeout' });
      // Never idle (a byte every 100 ms < 800 ms): the whole request's 2 s ended it.
      assert.ok(tookMs >= 1_900, `answered after ${tookMs} ms, before the request timeout`);
      await within(client.closed, 5_000, 'the connection closed');
    } finally {
      client.stop();
    }
  });

  it('streams outlive the idle and request timeouts (POST stream:true and GET …/stream)', async () => {
    const posted = await openSse(`${ctx.svc.url}/api/v1/responses`, {
      method: 'POST',
      key: ctx.key,
      body: { workflowId: 'greet', stream: true, inputs: { name: 'a' } },
    });
    const runId = await startRun(ctx.svc.url, ctx.key, 'greet', { name: 'b' });
    const attached = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream`, { key: ctx.key });
    try {
      for (const stream of [posted, attached]) {
        assert.equal(stream.status, 200);
        // The first keepalive comes after 3 s of silence: past both timeouts, the stream is still open.
        const keepalive = await stream.until((f) => f.comment === 'keepalive', 10_000);
        assert.ok(keepalive.at - stream.frames[0].at >= 2_500);
      }
    } finally {
      posted.abort();
      attached.abort();
    }
  });
});

describe('connections: early answers and the per-key stream cap', function () {
  this.timeout(60_000);
  const ctx = useService({ worker: false, env: { STREAM_MAX_PER_KEY: '2' } });
  const open: SseClient[] = [];

  before(async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet'));
  });
  afterEach(() => {
    for (const stream of open.splice(0)) stream.abort();
  });

  it('an unauthenticated upload gets its 401 and its connection is closed while the client still trickles', async () => {
    const host = new URL(ctx.svc.url).host;
    const client = trickle(
      ctx.svc.url,
      `POST /api/v1/files HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/octet-stream\r\nContent-Length: 10000000\r\n\r\n`,
      'x'.repeat(1024),
      50,
    );
    try {
      await within(client.answer, 10_000, 'an answer');
      const answer = await client.answer;
      expectError(answer, { status: 401, type: 'authentication_error', code: 'invalid_api_key' });
      assert.equal(answer.headers.get('connection'), 'close');
      // The request timeout is 5 minutes here: only the early answer's close can end it this soon.
      await within(client.closed, 5_000, 'the server closed the trickling connection');
    } finally {
      client.stop();
    }
  });

  /** Sends `head`: an envelope answer of `status`/`code` with CORS, then the server closes the connection. */
  async function answeredThenClosed(head: string, status: number, code: string): Promise<void> {
    const client = trickle(ctx.svc.url, head, '');
    try {
      await within(client.answer, 10_000, `an answer to ${head.split('\r\n')[0]}`);
      const answer = await client.answer;
      expectError(answer, { status, type: 'invalid_request_error', code });
      assert.equal(answer.headers.get('access-control-allow-origin'), '*');
      await within(client.closed, 5_000, 'the server closed the connection');
    } finally {
      client.stop();
    }
  }

  it('an Expect other than 100-continue is a 417 expectation_failed in the envelope with CORS, and the connection is closed (before: a bare 417)', async () => {
    const host = new URL(ctx.svc.url).host;
    for (const head of [
      `GET /api/v1/account HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.key}\r\nExpect: 202-accepted\r\n\r\n`,
      `POST /api/v1/responses HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.key}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: foo\r\n\r\n`,
    ]) {
      await answeredThenClosed(head, 417, 'expectation_failed');
    }
  });

  it('CONNECT is a 405 method_not_allowed in the envelope with CORS, and the connection is closed (before: closed without an answer)', async () => {
    const host = new URL(ctx.svc.url).host;
    for (const target of ['/api/v1/runs', host, 'example.com:443']) {
      await answeredThenClosed(
        `CONNECT ${target} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.key}\r\n\r\n`,
        405,
        'method_not_allowed',
      );
    }
    // The server still serves.
    assert.equal((await call(ctx.svc.url, 'GET', '/api/v1/account', { key: ctx.key })).status, 200);
  });

  /** Opens a stream of the run and keeps it for the test's end. */
  async function attach(runId: string, key = ctx.key): Promise<SseClient & { json?: any }> {
    const stream = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream`, { key });
    open.push(stream);
    return stream;
  }

  function expectCapped(res: ApiResponse): void {
    expectError(res, { status: 429, type: 'rate_limit_error', code: 'too_many_streams' });
    assert.equal(res.headers.get('retry-after'), '5');
  }

  it('a key holds at most STREAM_MAX_PER_KEY streams, and its links as many apart: one more is a 429 too_many_streams with Retry-After, on every kind of stream', async () => {
    const posted = await openSse(`${ctx.svc.url}/api/v1/responses`, {
      method: 'POST',
      key: ctx.key,
      body: { workflowId: 'greet', stream: true, inputs: { name: 'a' } },
    });
    open.push(posted);
    assert.equal(posted.status, 200);
    const runId = await startRun(ctx.svc.url, ctx.key, 'greet', { name: 'b' });
    assert.equal((await attach(runId)).status, 200);

    // The third: a reattach, a streaming start, a stream link.
    const third = await attach(runId);
    expectCapped({ status: third.status, headers: third.headers, body: third.json });
    const runsBefore = await ctx.svc.store.collections.runs.countDocuments({
      account_id: ctx.accountId,
    });
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'greet', stream: true, inputs: { name: 'c' } },
    });
    expectCapped(start);
    assert.equal(
      await ctx.svc.store.collections.runs.countDocuments({ account_id: ctx.accountId }),
      runsBefore,
      'a refused streaming start created a run',
    );
    const link = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, {
      key: ctx.key,
    });
    assert.equal(link.status, 200, JSON.stringify(link.body));
    // The key's links have slots of their own (a link's holders cannot take the key's): two open, one more is capped.
    for (let i = 0; i < 2; i++) {
      const linked = await openSse(link.body.url);
      open.push(linked);
      assert.equal(linked.status, 200);
    }
    expectCapped(await call(link.body.url, 'GET', ''));

    // Not streams: an async start and a read go on as usual.
    await startRun(ctx.svc.url, ctx.key, 'greet', { name: 'd' });
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key })).status,
      200,
    );
    // Another key has a cap of its own.
    const other = await ctx.newAccount();
    await publish(ctx.svc.url, other.key, greetingWorkflow('greet'));
    const otherRun = await startRun(ctx.svc.url, other.key, 'greet', { name: 'e' });
    assert.equal((await attach(otherRun, other.key)).status, 200);

    // A stream that ends gives its slot back.
    posted.abort();
    await posted.closed;
    const again = await waitFor(
      async () => {
        const stream = await attach(runId);
        return stream.status === 200 ? stream : undefined;
      },
      { what: 'a stream to open after one closed' },
    );
    assert.equal(again.status, 200);
  });
});

describe('stream links: a request allowance of their own', function () {
  this.timeout(60_000);
  const ctx = useService({ env: { RATE_LIMIT_REQUESTS_PER_MINUTE: '3' } });

  it('counts link requests against the key’s links, not the key, and refuses them past the limit (before: never counted)', async () => {
    await freshWindow(30); // every request below in one D16 window
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet')); // the key's request 1
    const runId = await startRun(ctx.svc.url, ctx.key, 'greet', { name: 'a' }); // a start: its own bucket
    const link = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, {
      key: ctx.key,
    }); // the key's request 2
    assert.equal(link.status, 200, JSON.stringify(link.body));
    for (let i = 0; i < 3; i++) {
      const res = await call(link.body.url, 'GET', '');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-ratelimit-remaining'), String(2 - i));
    }
    expectError(await call(link.body.url, 'GET', ''), {
      status: 429,
      type: 'rate_limit_error',
      code: 'rate_limit_exceeded',
    });
    // The key's own allowance is untouched by its links: its third request goes through.
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key })).status,
      200,
    );
  });
});
