/**
 * One `Authorization` header per request: two (the same key twice, two accounts' keys, any case of
 * the name) are a 401 saying so, on key routes and on the codec server, where Node alone took the
 * first and dropped the rest, so a proxy reading the last would disagree about the caller. A 401,
 * not a 400: a refusal anyone can make without a key stays out of the error-rate alert's whole.
 */
import assert from 'node:assert/strict';
import { expectError } from '../../support/api-assert';
import { rawRequest } from '../../support/raw-http';
import { useService } from '../../support/use-service';

const CODEC_TOKEN = 'codec-token-for-the-duplicate-header-test-0123456789';

describe('Authorization given more than once', function () {
  this.timeout(60_000);
  const ctx = useService({ worker: false, env: { CODEC_TOKEN } });

  /** A raw request with the given header lines (fetch joins repeated headers into one). */
  function send(method: string, path: string, headerLines: string[], body = '') {
    const host = new URL(ctx.svc.url).host;
    return rawRequest(
      ctx.svc.url,
      `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${headerLines.map((l) => `${l}\r\n`).join('')}` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }

  function expectRefused(res: Awaited<ReturnType<typeof send>>): void {
    expectError(res, {
      status: 401,
      type: 'authentication_error',
      code: 'invalid_api_key',
      message: ['`Authorization` is given more than once'],
    });
  }

  it('one key is served (the control)', async () => {
    const res = await send('GET', '/api/v1/account', [`Authorization: Bearer ${ctx.key}`]);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.id, ctx.accountId);
  });

  it('two keys, of two accounts or the same one, any case of the name, are refused with 401 (before: the first one was served, 200)', async () => {
    const other = await ctx.newAccount();
    for (const lines of [
      [`Authorization: Bearer ${ctx.key}`, `Authorization: Bearer ${other.key}`],
      [`Authorization: Bearer ${other.key}`, `authorization: Bearer ${ctx.key}`],
      [`Authorization: Bearer ${ctx.key}`, `AUTHORIZATION: Bearer ${ctx.key}`],
      [`Authorization: Bearer ${ctx.key}`, 'Authorization: Basic eDp5'],
    ])
      expectRefused(await send('GET', '/api/v1/account', lines));
    // A start is refused before anything is read or started.
    expectRefused(
      await send(
        'POST',
        '/api/v1/responses',
        [
          `Authorization: Bearer ${ctx.key}`,
          `Authorization: Bearer ${other.key}`,
          'Content-Type: application/json',
        ],
        '{"workflowId":"none","inputs":{}}',
      ),
    );
  });

  it("the codec server refuses two headers too, even with the operators' token in both (before: 200)", async () => {
    const body = '{"payloads":[]}';
    const one = await send(
      'POST',
      '/codec/decode',
      [`Authorization: Bearer ${CODEC_TOKEN}`, 'Content-Type: application/json'],
      body,
    );
    assert.equal(one.status, 200, one.raw);
    // The codec server sends no CORS but to its configured origins (D32): the envelope is checked as such.
    const refused = await send(
      'POST',
      '/codec/decode',
      [
        `Authorization: Bearer ${CODEC_TOKEN}`,
        `Authorization: Bearer ${CODEC_TOKEN}`,
        'Content-Type: application/json',
      ],
      body,
    );
    assert.equal(refused.status, 401, refused.raw);
    assert.equal(refused.body.error.type, 'authentication_error');
    assert.equal(refused.body.error.code, 'invalid_codec_token');
    assert.match(refused.body.error.message, /`Authorization` is given more than once/);
  });
});
