/**
 * API surface: the error envelope and CORS (spec "Errors", D22, the status-code table),
 * and authentication (spec "Authentication", D6), on the real stack.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { revokeKey, issueKey } from '../../../store/accounts';
import {
  assertCors,
  assertNoStack,
  expectError,
  expectRefusedWithin2s,
} from '../../support/api-assert';
import { greetingWorkflow } from '../../support/fixtures';
import { call, readResponse, type ApiResponse } from '../../support/http';
import { useService } from '../../support/use-service';
import { rawRequest } from '../../support/raw-http';

/** Sends a body with chunked transfer encoding (no Content-Length), so the limit is hit while streaming. */
function postChunked(
  baseUrl: string,
  path: string,
  key: string,
  totalBytes: number,
): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(baseUrl + path, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'transfer-encoding': 'chunked',
      },
    });
    req.on('response', (res) => {
      readResponse(res).then(resolve, reject);
    });
    // The server may answer and close before every chunk is written; only the response matters.
    req.on('error', (err) => (req.writableEnded ? undefined : reject(err)));
    const chunk = Buffer.alloc(64 * 1024, 'a');
    (async () => {
      req.write('{"workflowId":"');
      for (let sent = 0; sent < totalBytes; sent += chunk.length) {
        if (req.destroyed) return;
        if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
      }
      req.end('"}');
    })().catch(() => undefined);
  });
}

describe('API errors: envelope and CORS (D22, status table)', function () {
  this.timeout(120_000);
  const ctx = useService({ worker: false });

  it('answers an unknown route with 404 not_found_error / not_found', async () => {
    for (const path of ['/api/v1/nope', '/nope', '/api/v2/responses', '/api/v1/run']) {
      const res = await call(ctx.svc.url, 'GET', path, { key: ctx.key });
      expectError(res, { status: 404, type: 'not_found_error', code: 'not_found' });
    }
    // Without a key too: an unknown route is not an authentication question.
    expectError(await call(ctx.svc.url, 'POST', '/api/v1/nothing-here', { body: {} }), {
      status: 404,
      type: 'not_found_error',
      code: 'not_found',
    });
  });

  it('names every answer with its own X-Request-Id, errors included', async () => {
    const ids = new Set<string>();
    for (const [method, path] of [
      ['GET', '/api/v1/account'],
      ['GET', '/api/v1/nope'],
      ['POST', '/api/v1/responses'],
      ['GET', '/healthz'],
    ]) {
      const res = await call(ctx.svc.url, method, path, {
        key: ctx.key,
        body: method === 'POST' ? '{' : undefined,
      });
      const id = res.headers.get('x-request-id') ?? '';
      assert.match(id, /^req_[0-9a-f]{24}$/, `${method} ${path} ${res.status}`);
      ids.add(id);
    }
    assert.equal(ids.size, 4);
  });

  it('answers a wrong method on a known route with 405 invalid_request_error / method_not_allowed', async () => {
    const cases: Array<[string, string, string]> = [
      ['DELETE', '/api/v1/responses', 'POST'],
      ['GET', '/api/v1/responses', 'POST'],
      ['PUT', '/api/v1/responses', 'POST'],
      ['PATCH', '/api/v1/workflows', 'POST'],
      ['DELETE', '/api/v1/workflows', 'GET'],
      ['POST', '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN', 'DELETE'],
      ['DELETE', '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN/cancel', 'POST'],
    ];
    for (const [method, path, allowed] of cases) {
      const res = await call(ctx.svc.url, method, path, { key: ctx.key });
      const error = expectError(res, {
        status: 405,
        type: 'invalid_request_error',
        code: 'method_not_allowed',
      });
      assert.match(error.message, new RegExp(`${method}.*not allowed`), `${method} ${path}`);
      // RFC 9110: a 405 names the methods the route does take.
      assert.ok(
        (res.headers.get('allow') ?? '').split(/\s*,\s*/).includes(allowed),
        `${method} ${path}: Allow ${res.headers.get('allow')}`,
      );
    }
    // Without a key as well: the method is wrong whoever asks.
    expectError(await call(ctx.svc.url, 'GET', '/api/v1/responses'), {
      status: 405,
      type: 'invalid_request_error',
      code: 'method_not_allowed',
    });
  });

  it('answers a method no route implements with the envelope, never a 500', async () => {
    // Node parses WebDAV methods; the router has no handler for them anywhere.
    const known = await call(ctx.svc.url, 'PROPFIND', '/api/v1/responses', { key: ctx.key });
    expectError(known, { status: 405, type: 'invalid_request_error', code: 'method_not_allowed' });
    assert.equal(known.headers.get('allow'), 'POST');
    const unknown = await call(ctx.svc.url, 'PROPFIND', '/api/v1/nope', { key: ctx.key });
    expectError(unknown, { status: 404, type: 'not_found_error', code: 'not_found' });
    assert.equal(unknown.headers.get('allow'), null);
  });

  it('answers malformed JSON with 400 invalid_request_error', async () => {
    for (const body of [
      '{"workflowId": "hello",',
      '{workflowId: hello}',
      "{'a': 1}",
      '',
      'undefined',
    ]) {
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body,
        headers: { 'content-type': 'application/json' },
      });
      const error = expectError(res, { status: 400, type: 'invalid_request_error' });
      assert.match(error.message, /JSON/, `body ${JSON.stringify(body)}: ${error.message}`);
    }
    // Publishing reads JSON the same way.
    const pub = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
      key: ctx.key,
      body: '{"slug":',
      headers: { 'content-type': 'application/json' },
    });
    expectError(pub, { status: 400, type: 'invalid_request_error', message: ['JSON'] });
  });

  it('answers invalid UTF-8 with 400 invalid_request_error', async () => {
    const res = await fetch(ctx.svc.url + '/api/v1/responses', {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/json' },
      body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), // {"\xff\xfe":1}
    });
    const body = await res.json();
    expectError(
      { status: res.status, headers: res.headers, body },
      { status: 400, type: 'invalid_request_error', message: ['UTF-8'] },
    );
  });

  it('answers a wrong Content-Type with 415 in the envelope', async () => {
    const json = JSON.stringify({ workflowId: 'hello' });
    const startAs = (type: string) =>
      call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: json,
        headers: { 'content-type': type },
      });
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      // application/json exactly: no +json type (matched by Koa's ctx.is), no malformed parameter
      // (every case of the parser: json-body.unit.test.ts)
      'application/merge-patch+json',
      'application/json; charset="utf-8',
    ]) {
      expectError(await startAs(type), {
        status: 415,
        type: 'invalid_request_error',
        code: 'unsupported_media_type',
        message: ['Content-Type', 'application/json'],
      });
    }
    // No Content-Type at all.
    const res = await fetch(ctx.svc.url + '/api/v1/responses', {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.key}` },
      body: new Blob([json]), // a Blob without a type sends no Content-Type
    });
    expectError(
      { status: res.status, headers: res.headers, body: await res.json() },
      { status: 415, type: 'invalid_request_error' },
    );
    // A charset parameter is fine when it says UTF-8; another one is refused, not read as UTF-8.
    // Parameters as RFC 9110 writes them: any case, spaces around `;`, quoted values, empty ones (`;;`).
    for (const type of [
      'application/json; charset=utf-8',
      'application/json;charset="UTF8"',
      'Application/JSON ; Charset=UTF-8 ; v=1',
      'application/json;;',
      'application/json; profile="a \\"b\\";c"',
    ]) {
      expectError(await startAs(type), {
        status: 404,
        type: 'not_found_error',
        code: 'published_workflow_not_found',
      });
    }
    for (const charset of ['utf-16', 'latin1']) {
      expectError(await startAs(`application/json; charset=utf-8; charset=${charset}`), {
        status: 415,
        type: 'invalid_request_error',
        code: 'unsupported_media_type',
      });
      expectError(await startAs(`application/json; charset=${charset}`), {
        status: 415,
        type: 'invalid_request_error',
        code: 'unsupported_media_type',
        message: [`charset must be utf-8, not \`${charset}\``],
      });
    }
  });

  it('answers a 2 MiB body with 413 request_too_large (declared length and chunked)', async () => {
    const big = JSON.stringify({
      workflowId: 'hello',
      inputs: { name: 'x'.repeat(2 * 1024 * 1024) },
    });
    const declared = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: big,
    });
    expectError(declared, {
      status: 413,
      type: 'invalid_request_error',
      code: 'request_too_large',
      message: ['limit'],
    });
    const published = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
      key: ctx.key,
      body: big,
    });
    expectError(published, {
      status: 413,
      type: 'invalid_request_error',
      code: 'request_too_large',
    });
    const chunked = await postChunked(ctx.svc.url, '/api/v1/responses', ctx.key, 2 * 1024 * 1024);
    expectError(chunked, { status: 413, type: 'invalid_request_error', code: 'request_too_large' });
    // A body just under the 1 MiB limit is read (and fails later, on its content).
    const under = JSON.stringify({
      workflowId: 'hello',
      inputs: { name: 'x'.repeat(1024 * 1024 - 100) },
    });
    assert.ok(Buffer.byteLength(under) <= 1024 * 1024);
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', { key: ctx.key, body: under });
    expectError(res, {
      status: 404,
      type: 'not_found_error',
      code: 'published_workflow_not_found',
    });
  });

  it('closes the connection after a 413 instead of waiting for the rest of an endless body', async () => {
    const closed = await new Promise<{
      status: number;
      connection: string | undefined;
      afterMs: number;
    }>((resolve, reject) => {
      const req = http.request(ctx.svc.url + '/api/v1/responses', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ctx.key}`,
          'content-type': 'application/json',
          'transfer-encoding': 'chunked',
        },
      });
      let answered: { status: number; connection: string | undefined; at: number } | undefined;
      req.on('response', (res) => {
        answered = { status: res.statusCode!, connection: res.headers.connection, at: Date.now() };
        res.resume();
      });
      req.on('error', () => undefined); // EPIPE / ECONNRESET once the server hangs up: expected
      req.on('close', () =>
        answered
          ? resolve({
              status: answered.status,
              connection: answered.connection,
              afterMs: Date.now() - answered.at,
            })
          : reject(new Error('closed without an answer')),
      );
      const chunk = Buffer.alloc(64 * 1024, 'a');
      const t0 = Date.now();
      (async () => {
        req.write('{"workflowId":"');
        // Keeps sending (a client that ignores the 413) for up to 10 s.
        while (!req.destroyed && Date.now() - t0 < 10_000) {
          if (!req.write(chunk))
            await Promise.race([
              new Promise((r) => req.once('drain', r)),
              new Promise((r) => setTimeout(r, 500)),
            ]);
        }
        req.destroy();
      })().catch(() => undefined);
    });
    assert.equal(closed.status, 413);
    assert.equal(closed.connection, 'close');
    assert.ok(closed.afterMs < 3_000, `socket stayed open ${closed.afterMs} ms after the 413`);
  });

  it('answers 10,000 levels of nesting with 400 and keeps serving', async () => {
    const arrays = '['.repeat(10_000) + ']'.repeat(10_000);
    const objects = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000);
    for (const nested of [arrays, objects, `{"workflowId":"hello","inputs":{"name":${arrays}}}`]) {
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: nested,
        headers: { 'content-type': 'application/json' },
      });
      expectError(res, { status: 400, type: 'invalid_request_error', message: [/nest/i] });
    }
    const pub = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
      key: ctx.key,
      body: objects,
      headers: { 'content-type': 'application/json' },
    });
    expectError(pub, { status: 400, type: 'invalid_request_error' });

    const health = await call(ctx.svc.url, 'GET', '/healthz');
    assert.equal(health.status, 200);
    const again = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'still-alive' },
    });
    expectError(again, {
      status: 404,
      type: 'not_found_error',
      code: 'published_workflow_not_found',
    });
  });

  it("answers what Node's HTTP parser refuses with the envelope too", async () => {
    // Headers over Node's 16 KiB limit.
    const big = await call(ctx.svc.url, 'GET', '/healthz', {
      headers: { 'x-filler': 'f'.repeat(20 * 1024) },
    });
    expectError(big, { status: 431, type: 'invalid_request_error', code: 'request_too_large' });
    // Bytes that are not HTTP at all.
    const raw = await rawRequest(ctx.svc.url, 'HELLO THERE\r\n\r\n');
    assert.match(raw.raw, /^HTTP\/1\.1 400 /);
    assert.equal(raw.headers.get('access-control-allow-origin'), '*');
    assert.equal(raw.body.error.type, 'invalid_request_error');
    assert.equal((await call(ctx.svc.url, 'GET', '/healthz')).status, 200);
  });

  it('puts Access-Control-Allow-Origin: * on successful and error responses alike', async () => {
    const origin = { origin: 'https://app.example.com' };
    const health = await call(ctx.svc.url, 'GET', '/healthz', { headers: origin });
    assert.equal(health.status, 200);
    assertCors(health);
    // Without an Origin header too (a server-to-server caller).
    assertCors(await call(ctx.svc.url, 'GET', '/healthz'));
    const unauth = await call(ctx.svc.url, 'GET', '/api/v1/runs/run_x', { headers: origin });
    expectError(unauth, { status: 401, type: 'authentication_error' });
    // The 401 is readable by a browser, which needs the allow-origin of the actual response.
    assert.equal(unauth.headers.get('access-control-allow-origin'), '*');
  });

  it('answers a CORS preflight with 204 without a key', async () => {
    for (const path of [
      '/api/v1/responses',
      '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN',
      '/api/v1/runs/run_x/stream',
      '/api/v1/workflows',
    ]) {
      const res = await fetch(ctx.svc.url + path, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://app.example.com',
          'access-control-request-method': 'POST',
          'access-control-request-headers':
            'authorization,content-type,idempotency-key,last-event-id',
        },
      });
      assert.equal(res.status, 204, path);
      assert.equal(res.headers.get('access-control-allow-origin'), '*', path);
      const allowed = (res.headers.get('access-control-allow-headers') ?? '')
        .toLowerCase()
        .split(/\s*,\s*/);
      for (const h of ['authorization', 'content-type', 'idempotency-key', 'last-event-id']) {
        assert.ok(allowed.includes(h), `${path}: allow-headers ${allowed.join(',')} lacks ${h}`);
      }
      const methods = (res.headers.get('access-control-allow-methods') ?? '')
        .toUpperCase()
        .split(/\s*,\s*/);
      for (const m of ['GET', 'POST', 'DELETE'])
        assert.ok(methods.includes(m), `${path}: allow-methods lacks ${m}`);
      assert.equal(await res.text(), '');
    }
  });

  it('exposes X-RateLimit-* and Retry-After to browsers on an authenticated response', async () => {
    const res = await call(ctx.svc.url, 'GET', '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN', {
      key: ctx.key,
      headers: { origin: 'https://app.example.com' },
    });
    expectError(res, { status: 404, type: 'not_found_error', code: 'not_found' });
    const pub = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
      key: ctx.key,
      body: greetingWorkflow('cors-expose'),
      headers: { origin: 'https://app.example.com' },
    });
    assert.equal(pub.status, 201, JSON.stringify(pub.body));
    for (const r of [res, pub]) {
      assertCors(r);
      const exposed = (r.headers.get('access-control-expose-headers') ?? '')
        .toLowerCase()
        .split(/\s*,\s*/);
      for (const h of [
        'x-ratelimit-limit',
        'x-ratelimit-remaining',
        'x-ratelimit-reset',
        'retry-after',
      ]) {
        assert.ok(exposed.includes(h), `expose-headers ${exposed.join(',')} lacks ${h}`);
      }
    }
  });
});

describe('API errors: authentication (spec "Authentication", D6)', function () {
  this.timeout(120_000);
  const ctx = useService({ account: false, worker: false });

  /** Every protected operation of the API, each with a body it would accept. */
  const operations = (slug: string): Array<{ method: string; path: string; body?: unknown }> => [
    { method: 'POST', path: '/api/v1/workflows', body: greetingWorkflow(slug) },
    {
      method: 'POST',
      path: '/api/v1/responses',
      body: { workflowId: slug, inputs: { name: 'Ada' } },
    },
    { method: 'GET', path: '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN' },
  ];

  const expect401 = (res: ApiResponse, what: string) => {
    const error = expectError(res, {
      status: 401,
      type: 'authentication_error',
      code: 'invalid_api_key',
    });
    assert.match(error.message, /API key/i, what);
    assert.match(
      res.headers.get('www-authenticate') ?? '',
      /^Bearer\b/,
      `${what}: WWW-Authenticate`,
    );
  };

  it('refuses a request without an Authorization header', async () => {
    for (const op of operations('auth-none'))
      expect401(
        await call(ctx.svc.url, op.method, op.path, { body: op.body }),
        `${op.method} ${op.path}`,
      );
  });

  it('refuses malformed Authorization headers', async () => {
    const { key } = await ctx.newAccount();
    const malformed = [
      key, // no scheme
      `Basic ${Buffer.from(`user:${key}`).toString('base64')}`,
      `Token ${key}`,
      'Bearer',
      'Bearer ',
      `Bearer${key}`,
      `Bearer ${key} extra`,
      `Bearer ${key.slice(0, -1)}`, // truncated
      `Bearer ${key}x`, // extended
      `Bearer ${key.toUpperCase()}`,
      `Bearer "${key}"`,
      `Bearer ${'wrs_sk_' + 'a'.repeat(5000)}`,
    ];
    for (const header of malformed) {
      for (const op of operations('auth-malformed')) {
        const res = await call(ctx.svc.url, op.method, op.path, {
          body: op.body,
          headers: { authorization: header },
        });
        expect401(res, `${op.method} ${op.path} with ${header.slice(0, 40)}`);
      }
    }
    // The scheme is case-insensitive (RFC 9110), so the key itself still works.
    const ok = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
      body: greetingWorkflow('auth-ok'),
      headers: { authorization: `bearer ${key}` },
    });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
  });

  it('refuses a well-formed wrs_sk_ key that does not exist', async () => {
    const ghost = 'wrs_sk_' + 'Z9'.repeat(20);
    for (const op of operations('auth-ghost'))
      expect401(
        await call(ctx.svc.url, op.method, op.path, { key: ghost, body: op.body }),
        op.path,
      );
  });

  it('refuses a revoked key within 2 s (D6), while another key of the account keeps working', async () => {
    const { accountId, key, keyId } = await ctx.newAccount();
    const { secret: other } = await issueKey(ctx.svc.store.collections, accountId);
    const before = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
      key,
      body: greetingWorkflow('auth-revoke'),
    });
    assert.equal(before.status, 201, JSON.stringify(before.body));

    assert.equal(await revokeKey(ctx.svc.store.collections, keyId), true);
    const revokedAt = Date.now();
    // The API may remember the key for up to 2 s after the request above read it (D6), no longer.
    await expectRefusedWithin2s(
      async () => (await call(ctx.svc.url, 'GET', '/api/v1/runs', { key })).status,
      revokedAt,
    );
    for (const op of operations('auth-revoke'))
      expect401(await call(ctx.svc.url, op.method, op.path, { key, body: op.body }), op.path);

    const still = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
      key: other,
      body: greetingWorkflow('auth-revoke'),
    });
    assert.equal(still.status, 201, JSON.stringify(still.body));
    assert.equal(still.body.version, 2);
  });

  it('checks the key before reading the body', async () => {
    // Garbage that would be a 400 or 415 for an authenticated caller is a 401 without a key.
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      body: '{not json',
      headers: { 'content-type': 'text/plain' },
    });
    expect401(res, 'garbage without key');
    assertNoStack(res);
  });
});
