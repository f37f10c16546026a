/**
 * Hostile requests, a hand-written list: they get a 4xx envelope with CORS and no
 * stack trace, and the server stays healthy after each. Already covered elsewhere, not repeated
 * here: invalid UTF-8, wrong Content-Type, malformed JSON, 10,000-deep nesting (in the body and
 * in `inputs`), a body that never ends (test/api/middleware/error-handler.test.ts, test/api/routes/responses-limits.test.ts).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { expectError } from '../support/api-assert';
import { greetingWorkflow, publish, typedInputsWorkflow } from '../support/fixtures';
import { call, type ApiResponse } from '../support/http';
import { rawRequest } from '../support/raw-http';
import { useService } from '../support/use-service';
import { findRunRecord } from '../../store/runs';

/** Resolves on 'drain' or 'close' (the server hangs up after its 413: no drain then), leaving no listener behind. */
function waitDrainOrClose(req: http.ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      req.off('drain', done);
      req.off('close', done);
      resolve();
    };
    req.on('drain', done);
    req.on('close', done);
  });
}

describe('reliability: hostile input', function () {
  this.timeout(120_000);
  const ctx = useService({ worker: false });
  let host: string;

  before(async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet'));
    await publish(ctx.svc.url, ctx.key, typedInputsWorkflow('typed'));
    host = new URL(ctx.svc.url).host;
  });

  /** The server still answers: /healthz and an authenticated request. */
  async function assertHealthy(): Promise<void> {
    assert.equal(
      (await call(ctx.svc.url, 'GET', '/healthz')).status,
      200,
      'healthz after a hostile request',
    );
    const list = await call(ctx.svc.url, 'GET', '/api/v1/runs?limit=1', { key: ctx.key });
    assert.equal(
      list.status,
      200,
      `authenticated request after a hostile request: ${JSON.stringify(list.body)}`,
    );
  }

  const start = (body: unknown, headers: Record<string, string> = {}) =>
    call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });

  it('__proto__ and constructor keys: a 4xx envelope (or a correct run), never prototype pollution', async () => {
    const bodies = [
      '{"__proto__":{"polluted":"yes"},"workflowId":"greet","inputs":{"name":"a"}}',
      '{"constructor":{"prototype":{"polluted":"yes"}},"workflowId":"greet","inputs":{"name":"a"}}',
      '{"workflowId":"greet","inputs":{"name":"a","__proto__":{"polluted":"yes"}}}',
      '{"workflowId":"greet","inputs":{"name":"a","constructor":{"prototype":{"polluted":"yes"}}}}',
      '{"workflowId":"greet","inputs":{"__proto__":{"name":"from-proto","polluted":"yes"}}}',
      '{"workflowId":"greet","inputs":{"name":{"__proto__":{"polluted":"yes"}}}}',
      '{"workflowId":"__proto__"}',
      '{"workflowId":"constructor"}',
      '{"workflowId":"greet","version":"__proto__","inputs":{"name":"a"}}',
    ];
    for (const body of bodies) {
      const res = await start(body);
      if (res.status === 202) {
        // Accepted only when the body is a correct start after all; the run holds exactly what was sent.
        const run = await findRunRecord(ctx.svc.store.collections, res.body.run_id);
        assert.deepEqual(
          Object.keys(run?.inputs ?? {}).sort(),
          ['name'],
          `${body}: ${JSON.stringify(run?.inputs)}`,
        );
      } else {
        assert.ok(
          res.status >= 400 && res.status < 500,
          `${body}: ${res.status} ${JSON.stringify(res.body)}`,
        );
        expectError(res, { status: res.status, type: res.body?.error?.type });
      }
      assert.equal(({} as any).polluted, undefined, `prototype polluted by ${body}`);
      assert.equal((Object.prototype as any).name, undefined, `prototype polluted by ${body}`);
    }
    // Publishing walks the graph document: the same keys there.
    const pub = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
      key: ctx.key,
      body: '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"slug":"proto","nodes":[],"edges":[]}',
      headers: { 'content-type': 'application/json' },
    });
    expectError(pub, { status: 400, type: 'invalid_request_error' });
    assert.equal(({} as any).polluted, undefined);
    await assertHealthy();
  });

  it('NaN and Infinity literals are invalid JSON (400); 1e999 is no number input', async () => {
    for (const literal of ['NaN', 'Infinity', '-Infinity', '+1']) {
      const res = await start(
        `{"workflowId":"typed","inputs":{"product_name":"p","count":${literal},"gift_wrap":true}}`,
      );
      expectError(res, {
        status: 400,
        type: 'invalid_request_error',
        code: 'invalid_json',
        message: ['JSON'],
      });
    }
    // Valid JSON that JSON.parse turns into Infinity: refused as a number input, not stored as one.
    const huge = await start(
      '{"workflowId":"typed","inputs":{"product_name":"p","count":1e999,"gift_wrap":true}}',
    );
    expectError(huge, {
      status: 400,
      type: 'invalid_request_error',
      code: 'invalid_input_fields',
      param: 'count',
    });
    await assertHealthy();
  });

  it('duplicate keys: the last one wins, as JSON.parse defines (docs/api.md "Hostile input")', async () => {
    const res = await start(
      '{"workflowId":"nope","workflowId":"greet","inputs":{"name":"first"},"inputs":{"name":"last"}}',
    );
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const run = await findRunRecord(ctx.svc.store.collections, res.body.run_id);
    assert.deepEqual(run?.inputs, { name: 'last' });
    const wrong = await start('{"workflowId":"greet","workflowId":"nope"}');
    expectError(wrong, {
      status: 404,
      type: 'not_found_error',
      code: 'published_workflow_not_found',
    });
    await assertHealthy();
  });

  it('a 100 KB workflowId is a 400 (schema maximum), not echoed back; a 10 KB id in a path is a 404', async () => {
    const long = 'w'.repeat(100 * 1024);
    const res = await start({ workflowId: long });
    const error = expectError(res, {
      status: 400,
      type: 'invalid_request_error',
      param: 'workflowId',
    });
    assert.ok(
      JSON.stringify(res.body).length < 4_096,
      `the answer echoes the id: ${JSON.stringify(error).length} bytes`,
    );
    // In a URL the header limit answers first (431); under it, the path ids are unknown: 404, not echoed whole.
    expectError(
      await call(ctx.svc.url, 'GET', `/api/v1/runs?workflowId=${long}`, { key: ctx.key }),
      { status: 431, type: 'invalid_request_error' },
    );
    const mid = 'w'.repeat(10 * 1024);
    for (const path of [
      `/api/v1/workflows/${mid}`,
      `/api/v1/runs/${mid}`,
      `/api/v1/runs/${mid}/stream`,
      `/api/v1/files/${mid}`,
    ]) {
      const r = await call(ctx.svc.url, 'GET', path, { key: ctx.key });
      expectError(r, { status: 404, type: 'not_found_error' });
      assert.ok(
        JSON.stringify(r.body).length < 4_096,
        `${path.slice(0, 30)}… echoes the id: ${JSON.stringify(r.body).length} bytes`,
      );
    }
    const listed = await call(ctx.svc.url, 'GET', `/api/v1/runs?workflowId=${mid}`, {
      key: ctx.key,
    });
    expectError(listed, { status: 400, type: 'invalid_request_error', param: 'workflowId' });
    await assertHealthy();
  });

  it('a 50 MB body is a 413 answered while the client is still sending (declared and chunked)', async () => {
    const total = 50 * 1024 * 1024;
    for (const framing of ['content-length', 'chunked'] as const) {
      const outcome = await new Promise<{ res: ApiResponse; sentAtAnswer: number }>(
        (resolve, reject) => {
          const headers: Record<string, string | number> = {
            authorization: `Bearer ${ctx.key}`,
            'content-type': 'application/json',
          };
          if (framing === 'content-length') headers['content-length'] = total;
          else headers['transfer-encoding'] = 'chunked';
          const req = http.request(`${ctx.svc.url}/api/v1/responses`, { method: 'POST', headers });
          let sent = 0;
          req.on('error', () => undefined); // EPIPE / ECONNRESET once the server hangs up: expected
          req.on('response', (r) => {
            const sentAtAnswer = sent;
            const chunks: Buffer[] = [];
            r.on('data', (c: Buffer) => chunks.push(c));
            r.on('end', () => {
              const h = new Headers();
              for (const [name, value] of Object.entries(r.headers))
                if (typeof value === 'string') h.set(name, value);
              resolve({
                res: {
                  status: r.statusCode!,
                  headers: h,
                  body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
                },
                sentAtAnswer,
              });
            });
            r.on('error', reject);
          });
          const chunk = Buffer.alloc(256 * 1024, 'a');
          (async () => {
            req.write('{"workflowId":"greet","inputs":{"name":"');
            sent = 40;
            while (!req.destroyed && sent + chunk.length <= total) {
              const flushed = req.write(chunk);
              sent += chunk.length;
              // Wait for drain, but stop at once when the server hangs up (no drain then).
              if (!flushed) await waitDrainOrClose(req);
            }
          })().catch(() => undefined);
        },
      );
      expectError(outcome.res, {
        status: 413,
        type: 'invalid_request_error',
        code: 'request_too_large',
      });
      assert.equal(outcome.res.headers.get('connection'), 'close', framing);
      // Socket buffers hold a few MB at most: the answer came long before 50 MB were sent.
      assert.ok(
        outcome.sentAtAnswer < total / 2,
        `${framing}: answered only after ${outcome.sentAtAnswer} bytes`,
      );
    }
    await assertHealthy();
  });

  it('CR/LF and control characters in Idempotency-Key are a 400 envelope; nothing is echoed into headers', async () => {
    const body = JSON.stringify({ workflowId: 'greet', inputs: { name: 'a' } });
    const head = (idem: string) =>
      `POST /api/v1/responses HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.key}\r\nContent-Type: application/json\r\n` +
      `Idempotency-Key: ${idem}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
    const cases: Array<[string, string]> = [
      ['bare CR', 'abc\rSet-Cookie: x=1'],
      ['bare LF', 'abc\nSet-Cookie: x=1'],
      ['NUL', 'abc\u0000def'],
      ['obs-fold', 'abc\r\n Set-Cookie: x=1'],
      ['control character', 'abc\u0001def'],
      ['DEL', 'abc\u007fdef'],
      ['tab inside', 'abc\tdef'],
      ['space inside', 'abc def'],
      ['non-ASCII byte', 'abc\u00e9def'],
      ['empty', ''],
      ['too long', 'k'.repeat(256)],
    ];
    for (const [what, idem] of cases) {
      const res = await rawRequest(ctx.svc.url, Buffer.from(head(idem), 'latin1'));
      const error = expectError(res, { status: 400, type: 'invalid_request_error' });
      assert.ok(
        ['malformed_request', 'invalid_idempotency_key'].includes(error.code),
        `${what}: ${JSON.stringify(error)}`,
      );
      assert.equal(res.headers.get('set-cookie'), null, `${what}: header injected`);
    }
    // What a header line break really does: two headers; the key is `abc`, and `X-Injected` is ignored.
    const split = await rawRequest(ctx.svc.url, head('abc-split\r\nX-Injected: 1'));
    assert.equal(split.status, 202, JSON.stringify(split.body));
    assert.equal(split.headers.get('x-injected'), null);
    await assertHealthy();
  });

  it('a compressed JSON body (Content-Encoding: gzip) is a 415 naming the coding, not "not UTF-8"', async () => {
    const body = gzipSync(Buffer.from(JSON.stringify({ workflowId: 'greet', inputs: {} })));
    const res = await fetch(`${ctx.svc.url}/api/v1/responses`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ctx.key}`,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      body,
    });
    const answer = { status: res.status, headers: res.headers, body: (await res.json()) as any };
    expectError(answer as ApiResponse, {
      status: 415,
      type: 'invalid_request_error',
      code: 'unsupported_media_type',
    });
    assert.match(answer.body.error.message, /Content-Encoding `gzip` is not supported/);
    await assertHealthy();
  });

  it('a body with a transfer coding but chunked (gzip, chunked) is a 415, and no file is stored', async () => {
    const { host } = new URL(ctx.svc.url);
    const chunked = (bytes: Buffer) =>
      Buffer.concat([
        Buffer.from(`${bytes.length.toString(16)}\r\n`),
        bytes,
        Buffer.from('\r\n0\r\n\r\n'),
      ]);
    const send = (target: string, type: string, body: string) =>
      rawRequest(
        ctx.svc.url,
        Buffer.concat([
          Buffer.from(
            `POST ${target} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.key}\r\n` +
              `Content-Type: ${type}\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n`,
          ),
          chunked(gzipSync(Buffer.from(body))),
        ]),
      );
    const files = async () =>
      (await call(ctx.svc.url, 'GET', '/api/v1/files', { key: ctx.key })).body.data.length;
    const before = await files();
    for (const res of [
      await send('/api/v1/files?name=te.txt', 'text/plain', 'stored compressed before'),
      await send('/api/v1/responses', 'application/json', JSON.stringify({ workflowId: 'greet' })),
    ]) {
      expectError(res, {
        status: 415,
        type: 'invalid_request_error',
        code: 'unsupported_media_type',
      });
      assert.match((res.body as any).error.message, /Transfer-Encoding `gzip` is not supported/);
    }
    assert.equal(await files(), before);
    await assertHealthy();
  });

  it('path traversal in run, file and workflow ids is a 404 envelope, encoded or not', async () => {
    const ids = [
      '..%2F..%2Fetc%2Fpasswd',
      'run_..%2f',
      'run_..%2F..%2F..%2Fetc%2Fpasswd',
      '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
      '..%5C..%5Cwindows',
      'run_%00',
      '%E0%A4%A',
      '%',
      '%2F',
      '..',
    ];
    const paths = ids.flatMap((id) => [
      `/api/v1/runs/${id}`,
      `/api/v1/runs/${id}/stream`,
      `/api/v1/files/${id}`,
      `/api/v1/workflows/${id}`,
    ]);
    for (const path of paths) {
      // A raw request: fetch would normalize dot segments before sending.
      const res = await rawRequest(
        ctx.svc.url,
        `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.key}\r\nConnection: close\r\n\r\n`,
      );
      expectError(res, { status: 404, type: 'not_found_error' });
    }
    for (const id of ids) {
      const res = await rawRequest(
        ctx.svc.url,
        `POST /api/v1/runs/${id}/cancel HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.key}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      );
      expectError(res, { status: 404, type: 'not_found_error' });
    }
    // Unencoded dot segments are not resolved by the server: no route, 404.
    for (const path of [
      '/api/v1/runs/../../etc/passwd',
      '/api/v1/runs/run_../',
      '/api/v1/../../../etc/passwd',
      '/files/../../etc/passwd/content',
    ]) {
      const res = await rawRequest(
        ctx.svc.url,
        `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.key}\r\nConnection: close\r\n\r\n`,
      );
      expectError(res, { status: 404, type: 'not_found_error' });
    }
    // The signed-link route has no Authorization: a traversal there is refused by the signature check.
    const link = await rawRequest(
      ctx.svc.url,
      `GET /files/..%2F..%2Fetc%2Fpasswd/content HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
    );
    assert.ok([403, 404].includes(link.status), `${link.status} ${JSON.stringify(link.body)}`);
    expectError(link, { status: link.status, type: link.body?.error?.type });
    await assertHealthy();
  });
});
