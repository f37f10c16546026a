/**
 * No request can take the API process down. The production entry (`api/main.ts`) runs as a child
 * process on the service's database, and every route gets truncated, oversized and malformed
 * requests over raw sockets: multipart bodies with bad or missing boundaries, cut-off parts and
 * huge part headers; JSON cut off, nested 100,000 deep, with huge numbers and wrong types;
 * `Last-Event-ID` garbage, huge or negative; malformed, overlapping and huge `Range`s; bad query
 * strings; broken framing. While they run, `/healthz` is asked after every tenth and must answer
 * 200 every time; each answer is complete, and an error is the envelope with a 4xx status. At the
 * end the process is the one that started.
 *
 * The first case is the 67-byte upload that used to end the process with an unhandled 'error'
 * event (a part cut off before the closing boundary): now a 400 `invalid_multipart`, with no
 * byte of the file left stored.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { startApiProcess, type ApiProcess } from '../support/api-process';
import { greetingWorkflow, publish } from '../support/fixtures';
import { call } from '../support/http';
import { startRun } from '../support/runs';
import { useService } from '../support/use-service';
import { filesCollection } from '../../store/files';

/** One answer read off a raw socket, or how the socket ended without one. */
interface RawAnswer {
  status?: number;
  headers: Record<string, string>;
  body: string;
  /** Set when no complete answer came: 'reset', 'closed' or 'timeout'. */
  failure?: string;
}

/**
 * Sends `request` as-is on a new connection and reads one answer: complete by Content-Length, by
 * the last chunk, or at the head of an event stream (a stream that opened is a fine answer; the
 * socket is then closed). A write the server refuses midway (it answered and hung up) is not a failure.
 */
function send(url: string, request: Buffer | string, timeoutMs = 15_000): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(request, () => undefined);
    });
    let data = Buffer.alloc(0);
    let done = false;
    const finish = (failure?: string) => {
      if (done) return;
      const text = data.toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const headers: Record<string, string> = {};
      let status: number | undefined;
      if (split >= 0) {
        const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
        status = Number(statusLine.split(' ')[1]);
        for (const line of lines) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
      }
      const body = split >= 0 ? text.slice(split + 4) : '';
      if (!failure) {
        if (status === undefined) return;
        const complete =
          (headers['content-type'] ?? '').startsWith('text/event-stream') ||
          (headers['content-length'] !== undefined &&
            Buffer.byteLength(body, 'latin1') >= Number(headers['content-length'])) ||
          (headers['transfer-encoding'] === 'chunked' && body.endsWith('0\r\n\r\n')) ||
          status === 204 ||
          status === 304;
        if (!complete) return;
      } else if (status !== undefined && failure === 'closed') {
        // Close-delimited answers end with the connection.
        if (headers['content-length'] === undefined && !headers['transfer-encoding']) failure = '';
      }
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status, headers, body, failure: failure || undefined });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      finish();
    });
    socket.on('end', () => finish('closed'));
    socket.on('close', () => finish('closed'));
    socket.on('error', (err: NodeJS.ErrnoException) =>
      // EPIPE: the server answered and stopped reading while we still wrote; the answer may follow.
      err.code === 'EPIPE' ? undefined : finish('reset'),
    );
  });
}

/** A request as bytes. `body` undefined sends no body headers; `length` overrides Content-Length. */
function http1(
  method: string,
  path: string,
  host: string,
  headers: Record<string, string>,
  body?: Buffer | string,
  length?: number | string,
): Buffer {
  const bytes = body === undefined ? undefined : Buffer.from(body as string, 'latin1');
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${host}`, 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (bytes !== undefined && !headers['Transfer-Encoding'])
    lines.push(`Content-Length: ${length ?? bytes.length}`);
  return Buffer.concat([
    Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'),
    bytes ?? Buffer.alloc(0),
  ]);
}

const TRUNCATED_UPLOAD =
  '--XX\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\nabc';

describe('reliability: fuzzing every route never takes the API process down', function () {
  this.timeout(300_000);
  // The in-process service gives the database, task queue and account; the API under test is a child process on them.
  const ctx = useService({
    worker: false,
    env: {
      RATE_LIMIT_REQUESTS_PER_MINUTE: '1000000',
      RATE_LIMIT_STARTS_PER_MINUTE: '1000000',
      STREAM_POLL_MS: '200',
    },
  });
  let api: ApiProcess;
  let host: string;
  let runId: string;
  let fileId: string;
  let fileLink: string;
  let streamLink: string;

  before(async () => {
    api = await startApiProcess(ctx.svc.config, {
      // Short request timeouts, so bodies that never arrive are answered 408 within the test.
      env: { API_HEADERS_TIMEOUT_MS: '2000', API_REQUEST_TIMEOUT_MS: '2000' },
    });
    host = new URL(api.url).host;
    await publish(api.url, ctx.key, greetingWorkflow('greet'));
    runId = await startRun(api.url, ctx.key, 'greet', { name: 'fuzz' }); // stays pending: no worker
    const upload = await call(api.url, 'POST', '/api/v1/files?name=a.txt', {
      key: ctx.key,
      body: 'hello, file',
      headers: { 'content-type': 'text/plain' },
    });
    assert.equal(upload.status, 201, JSON.stringify(upload.body));
    fileId = upload.body.id;
    fileLink = new URL(upload.body.url).pathname + new URL(upload.body.url).search;
    const link = await call(api.url, 'POST', `/api/v1/runs/${runId}/stream-link`, { key: ctx.key });
    assert.equal(link.status, 200, JSON.stringify(link.body));
    streamLink = new URL(link.body.url).pathname + new URL(link.body.url).search;
  });
  after(async () => {
    await api?.kill();
  });

  /** The child is still the process that started, and it answers. */
  async function assertAlive(): Promise<void> {
    assert.equal(api.child.exitCode, null, `the API exited:\n${api.output()}`);
    assert.equal(api.child.signalCode, null, `the API was killed:\n${api.output()}`);
    const health = await call(api.url, 'GET', '/healthz', { timeoutMs: 10_000 });
    assert.equal(health.status, 200);
  }

  /** Asserts a complete answer; an error must be the envelope with a 4xx status. */
  function assertAnswer(what: string, answer: RawAnswer): void {
    assert.equal(answer.failure, undefined, `${what}: ${answer.failure} without an answer`);
    const status = answer.status ?? 0;
    assert.ok(status > 0 && status < 500, `${what}: ${status} ${answer.body.slice(0, 300)}`);
    if (status >= 400) {
      assert.match(answer.headers['content-type'] ?? '', /^application\/json/, what);
      const parsed = JSON.parse(answer.body) as { error?: { message?: unknown; type?: unknown } };
      assert.deepEqual(Object.keys(parsed), ['error'], `${what}: ${answer.body.slice(0, 300)}`);
      assert.equal(typeof parsed.error?.message, 'string', what);
      assert.equal(typeof parsed.error?.type, 'string', what);
      // D22: CORS on every error; the codec server answers only its configured origins (D32).
      if (!what.includes(' /codec/'))
        assert.equal(answer.headers['access-control-allow-origin'], '*', what);
      assert.doesNotMatch(answer.body, /node_modules|\.ts:\d+|\n\s+at /, `${what}: a stack trace`);
    }
  }

  it('a multipart upload cut off before its closing boundary is a 400 invalid_multipart; nothing is stored and the process lives', async () => {
    const files = filesCollection(ctx.svc.store.db);
    const chunks = ctx.svc.store.db.collection('files.chunks');
    const filesBefore = await files.countDocuments({ 'metadata.account_id': ctx.accountId });
    const chunksBefore = await chunks.countDocuments({});
    const headers = {
      Authorization: `Bearer ${ctx.key}`,
      'Content-Type': 'multipart/form-data; boundary=XX',
    };
    // The 67 bytes of the report, then a part cut off after 600 KB (GridFS chunks were written by then).
    const big = `${TRUNCATED_UPLOAD}${'x'.repeat(600 * 1024)}`;
    for (const body of [TRUNCATED_UPLOAD, big]) {
      const answer = await send(api.url, http1('POST', '/api/v1/files', host, headers, body));
      assertAnswer(`truncated upload of ${body.length} bytes`, answer);
      assert.equal(answer.status, 400, answer.body);
      assert.equal(JSON.parse(answer.body).error.code, 'invalid_multipart', answer.body);
      await assertAlive();
    }
    // The answer goes out after the partial file is removed.
    assert.equal(await files.countDocuments({ 'metadata.account_id': ctx.accountId }), filesBefore);
    assert.equal(await chunks.countDocuments({}), chunksBefore);
  });

  it('truncated, oversized and malformed requests to every route: each answered, /healthz answers throughout', async () => {
    const auth = { Authorization: `Bearer ${ctx.key}` };
    const json = { ...auth, 'Content-Type': 'application/json' };
    // Every route of the app; the documented ones are checked against the served OpenAPI document below.
    const routes: Array<[string, string, Record<string, string>]> = [
      ['GET', '/healthz', {}],
      ['GET', '/readyz', {}],
      ['GET', '/metrics', {}],
      ['GET', '/', {}],
      ['GET', '/playground/app.js', {}],
      ['GET', '/api/v1/openapi.json', {}],
      ['POST', '/api/v1/workflows', json],
      ['GET', '/api/v1/workflows', auth],
      ['GET', '/api/v1/workflows/greet', auth],
      // D26: an id of no workflow, so the fuzzing deletes nothing the other routes read.
      ['DELETE', '/api/v1/workflows/wf_01J00000000000000000000000', auth],
      ['POST', '/api/v1/responses', json],
      ['GET', '/api/v1/runs', auth],
      ['GET', `/api/v1/runs/${runId}`, auth],
      ['GET', `/api/v1/runs/${runId}/outputs/greeting`, auth],
      ['POST', `/api/v1/runs/${runId}/cancel`, auth],
      // D39: an id of no run, so the fuzzing deletes nothing the other routes read.
      ['DELETE', '/api/v1/runs/run_01J00000000000000000000000', auth],
      // D38: the same id of no run, so a well-formed body starts nothing.
      ['POST', '/api/v1/runs/run_01J00000000000000000000000/rerun', json],
      ['GET', `/api/v1/runs/${runId}/stream`, auth],
      ['POST', `/api/v1/runs/${runId}/stream-link`, json],
      ['POST', '/api/v1/files', auth],
      ['GET', '/api/v1/files', auth],
      ['GET', `/api/v1/files/${fileId}`, auth],
      // D19: an id of no file, so the fuzzing deletes nothing the other routes read.
      ['DELETE', '/api/v1/files/file_01J00000000000000000000000', auth],
      ['GET', '/api/v1/account', auth],
      ['GET', fileLink, {}],
      ['GET', streamLink, {}],
      ['POST', '/codec/decode', json],
      ['POST', '/codec/encode', json],
      ['POST', '/codec/some-token/decode', json],
      ['POST', '/codec/some-token/encode', json],
    ];
    const documented = (await call(api.url, 'GET', '/api/v1/openapi.json')).body.paths as Record<
      string,
      Record<string, unknown>
    >;
    for (const [path, methods] of Object.entries(documented)) {
      for (const method of Object.keys(methods)) {
        const pattern = new RegExp(
          `^${path.replace(/\{[^}]+\}/g, '[^/?]+').replace(/[.]/g, '\\.')}(\\?|$)`,
        );
        assert.ok(
          routes.some(([m, p]) => m === method.toUpperCase() && pattern.test(p)),
          `the fuzz list misses ${method.toUpperCase()} ${path}`,
        );
      }
    }

    const multipart = (boundary: string) => ({
      'Content-Type': `multipart/form-data; boundary=${boundary}`,
    });
    const part = (headersText: string, content: string, boundary = 'XX') =>
      `--${boundary}\r\n${headersText}\r\n\r\n${content}\r\n`;
    const filePart = 'Content-Disposition: form-data; name="f"; filename="a.txt"';
    // [label, extra headers, body, declared length]
    const bodies: Array<[string, Record<string, string>, string, number?]> = [
      ['JSON cut off', {}, '{"workflowId":"greet","inputs":{"na'],
      ['JSON declared longer than sent', {}, '{"workflowId":"gr', 4096],
      ['JSON nested 100,000 deep', {}, '['.repeat(100_000) + ']'.repeat(100_000)],
      ['JSON objects nested 20,000 deep', {}, '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000)],
      [
        'JSON huge numbers',
        {},
        `{"workflowId":"greet","version":1${'0'.repeat(400)},"inputs":{"name":1e999999},"stream":1e-999999,"ttl_seconds":${'9'.repeat(1000)}}`,
      ],
      [
        'JSON wrong types',
        {},
        '{"workflowId":[],"inputs":"x","stream":"yes","version":{},"ttl_seconds":"1"}',
      ],
      ['JSON null', {}, 'null'],
      ['JSON array', {}, '[1,2,3]'],
      ['JSON string', {}, '"greet"'],
      ['JSON __proto__', {}, '{"__proto__":{"x":1},"constructor":{"prototype":{"y":1}}}'],
      ['invalid UTF-8', {}, '{"workflowId":"\xff\xfe\xc0"}'],
      ['empty body', {}, ''],
      ['declared over every limit', {}, '{', 2 * 1024 * 1024 * 1024],
      ['JSON over the body limit', {}, `{"workflowId":"${'a'.repeat(1_200_000)}"}`],
      ['multipart cut off', multipart('XX'), TRUNCATED_UPLOAD],
      [
        'multipart without a boundary',
        { 'Content-Type': 'multipart/form-data' },
        part(filePart, 'abc') + '--XX--',
      ],
      ['multipart with an empty boundary', multipart(''), part(filePart, 'abc') + '--XX--'],
      ['multipart with another boundary', multipart('YY'), part(filePart, 'abc') + '--XX--'],
      [
        'multipart with a 200-char boundary',
        multipart('B'.repeat(200)),
        part(filePart, 'abc', 'B'.repeat(200)),
      ],
      [
        'multipart with a 64 KB part header',
        multipart('XX'),
        part(`${filePart}\r\nX-Pad: ${'p'.repeat(64 * 1024)}`, 'abc') + '--XX--',
      ],
      [
        'multipart header never ends',
        multipart('XX'),
        `--XX\r\n${filePart}\r\nX: ${'q'.repeat(100_000)}`,
      ],
      [
        'multipart with no file part',
        multipart('XX'),
        part('Content-Disposition: form-data; name="a"', 'b') + '--XX--',
      ],
      [
        'multipart with 100 parts',
        multipart('XX'),
        part(filePart, 'abc') +
          part('Content-Disposition: form-data; name="a"', 'b').repeat(100) +
          '--XX--',
      ],
      [
        'multipart second part cut off',
        multipart('XX'),
        part(filePart, 'abc') +
          '--XX\r\nContent-Disposition: form-data; name="g"; filename="b"\r\n\r\nzz',
      ],
      ['multipart garbage', multipart('XX'), '\x00\x01--XX--\r\n--XX\r\n\r\n\r\n--'],
      ['multipart declared longer than sent', multipart('XX'), part(filePart, 'abc'), 100_000],
      ['wrong content type', { 'Content-Type': 'text/html; charset=x-bogus' }, '<b>x</b>'],
      ['garbage content type', { 'Content-Type': ';;;/=\t' }, 'x'],
    ];
    const headerCases: Array<[string, Record<string, string>]> = [
      ['Last-Event-ID garbage', { 'Last-Event-ID': 'abc' }],
      ['Last-Event-ID negative', { 'Last-Event-ID': '-1' }],
      ['Last-Event-ID huge', { 'Last-Event-ID': '9'.repeat(8_000) }],
      ['Last-Event-ID beyond the log', { 'Last-Event-ID': '999999999' }],
      ['Last-Event-ID float', { 'Last-Event-ID': '1e3' }],
      ['Last-Event-ID non-ASCII', { 'Last-Event-ID': '\xe9\xff' }],
      ['Range malformed', { Range: 'bytes=abc' }],
      ['Range reversed', { Range: 'bytes=5-1' }],
      [
        'Range overlapping x1000',
        { Range: `bytes=${Array.from({ length: 1000 }, () => '0-5').join(',')}` },
      ],
      ['Range huge', { Range: `bytes=${'9'.repeat(400)}-` }],
      ['Range suffix zero', { Range: 'bytes=-0' }],
      ['Range other unit', { Range: 'items=0-1' }],
      ['If-Range garbage with Range', { Range: 'bytes=0-1', 'If-Range': '\x01"' }],
      ['Authorization garbage', { Authorization: `Bearer ${'k'.repeat(10_000)}` }],
      ['Prefer garbage', { Prefer: `wait=${'9'.repeat(500)}, wait=-1` }],
      ['Idempotency-Key huge', { 'Idempotency-Key': 'i'.repeat(8_000) }],
    ];
    const queries = [
      '?limit=-1&limit=2',
      '?limit=1e999',
      '?limit=99999999999999999999999',
      '?starting_after=-5',
      '?starting_after=abc&starting_after=1',
      '?starting_after[$gt]=0',
      '?%zz=%zz',
      '?a[b][c][d][e][f][g]=1',
      '?__proto__[polluted]=1&constructor[prototype][x]=1',
      `?q=${'x'.repeat(10_000)}`,
      '?expires=NaN&sig=%00',
      '?expires=99999999999999999999&sig=' + 'f'.repeat(5000),
      '?cursor=%00%ff&order=sideways&status[]=x',
      '?ttl_seconds=-1&name=%2e%2e%2f',
    ];

    const cases: Array<[string, Buffer]> = [];
    for (const [method, path, base] of routes) {
      const withQuery = (q: string) => (path.includes('?') ? `${path}&${q.slice(1)}` : path + q);
      for (const [label, extra, body, length] of bodies)
        cases.push([
          `${method} ${path} ${label}`,
          http1(method, path, host, { ...base, ...extra }, body, length),
        ]);
      for (const [label, extra] of headerCases)
        cases.push([
          `${method} ${path} ${label}`,
          http1(method, path, host, { ...base, ...extra }),
        ]);
      for (const q of queries)
        cases.push([
          `${method} ${withQuery(q).slice(0, 80)}`,
          http1(method, withQuery(q), host, base),
        ]);
      // Framing Node's parser refuses: a bad chunk size, both framings at once, a negative length.
      cases.push([
        `${method} ${path} bad chunk size`,
        http1(
          method,
          path,
          host,
          { ...base, 'Transfer-Encoding': 'chunked' },
          'zz\r\nabc\r\n0\r\n\r\n',
        ),
      ]);
      cases.push([
        `${method} ${path} chunked cut off`,
        http1(method, path, host, { ...base, 'Transfer-Encoding': 'chunked' }, '10\r\nabc'),
      ]);
      cases.push([
        `${method} ${path} Content-Length and Transfer-Encoding`,
        Buffer.from(
          `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
        ),
      ]);
      cases.push([`${method} ${path} negative length`, http1(method, path, host, base, 'abc', -3)]);
    }

    // /healthz between the cases, from every worker (after every 10th case): each answer must be 200.
    let healthChecks = 0;
    const failures: string[] = [];
    let next = 0;
    const workers = Array.from({ length: 12 }, async () => {
      while (next < cases.length) {
        const index = next++;
        const [what, request] = cases[index];
        const answer = await send(api.url, request);
        try {
          assertAnswer(what, answer);
        } catch (err) {
          failures.push((err as Error).message.replace(/\s+/g, ' ').slice(0, 240));
        }
        if (index % 10 === 0) {
          const health = await send(api.url, http1('GET', '/healthz', host, {}), 10_000);
          assert.equal(
            health.status,
            200,
            `/healthz after ${what}: ${health.failure ?? health.status}\n${api.output()}`,
          );
          healthChecks++;
        }
      }
    });
    await Promise.all(workers);
    assert.deepEqual(
      failures.slice(0, 20),
      [],
      `${failures.length} of ${cases.length} cases failed`,
    );
    await assertAlive();
    assert.doesNotMatch(api.output(), /last_resort/, 'an error escaped a request');
    console.log(
      `      ${cases.length} hostile requests to ${routes.length} routes; ${healthChecks} /healthz answers, all 200`,
    );
  });
});
