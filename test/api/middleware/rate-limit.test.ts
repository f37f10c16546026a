/**
 * Rate limits (D16): per key, fixed one-minute windows shared by every API process
 * through MongoDB; starts and other requests counted apart; `X-RateLimit-*` on every
 * authenticated answer and `Retry-After` on 429; limits configurable per account.
 */
import assert from 'node:assert/strict';
import { runCli } from '../../../cli/run-cli';
import { issueKey } from '../../../store/accounts';
import { newAccount } from '../../support/accounts';
import { expectError } from '../../support/api-assert';
import { greetingWorkflow, publish } from '../../support/fixtures';
import { call, type ApiResponse } from '../../support/http';
import { openSse } from '../../support/sse';
import { startService, type TestService } from '../../support/service';
import { freshWindow, secondsLeft } from '../../support/rate-window';

const start = (
  svc: TestService,
  key: string,
  body: unknown = { workflowId: 'greet', inputs: { name: 'x' } },
) => call(svc.url, 'POST', '/api/v1/responses', { key, body });

/** Asserts the D16 headers: limit, remaining (when given) and a reset matching the window's end. */
function expectRateHeaders(res: { headers: Headers }, limit: number, remaining?: number): void {
  const h = (name: string) => res.headers.get(name);
  assert.equal(h('x-ratelimit-limit'), String(limit), 'X-RateLimit-Limit');
  if (remaining !== undefined)
    assert.equal(h('x-ratelimit-remaining'), String(remaining), 'X-RateLimit-Remaining');
  else assert.match(h('x-ratelimit-remaining') ?? '', /^\d+$/);
  const reset = Number(h('x-ratelimit-reset'));
  assert.ok(
    Number.isInteger(reset) && reset >= 1 && reset <= 60,
    `X-RateLimit-Reset ${h('x-ratelimit-reset')}`,
  );
  assert.ok(
    Math.abs(reset - secondsLeft()) <= 2,
    `X-RateLimit-Reset ${reset} vs ${secondsLeft()} s left in the window`,
  );
}

/** Asserts a 429 with the envelope, the headers and Retry-After equal to the reset. */
function expect429(res: ApiResponse, limit: number): void {
  expectError(res, {
    status: 429,
    type: 'rate_limit_error',
    code: 'rate_limit_exceeded',
    message: [String(limit)],
  });
  expectRateHeaders(res, limit, 0);
  assert.equal(res.headers.get('retry-after'), res.headers.get('x-ratelimit-reset'), 'Retry-After');
}

describe('rate limits (D16)', function () {
  this.timeout(180_000);
  let a: TestService;
  let b: TestService;

  before(async () => {
    a = await startService({ worker: false });
    // A second API process on the same database.
    b = await startService({ worker: false, env: { MONGODB_DB: a.config.mongo.dbName } });
  });
  after(async () => {
    await b?.close();
    await a?.close();
  });

  it('refuses the 61st start in a window with 429 and the headers, counting starts across two API processes', async () => {
    const acct = await newAccount(a.store.collections);
    await publish(a.url, acct.key, greetingWorkflow('greet'));
    await freshWindow();
    for (let i = 1; i <= 60; i++) {
      const res = await start(i % 2 ? a : b, acct.key);
      assert.equal(res.status, 202, `start ${i}: ${JSON.stringify(res.body)}`);
      expectRateHeaders(res, 60, 60 - i);
      assert.equal(res.headers.get('retry-after'), null);
    }
    expect429(await start(a, acct.key), 60);
    expect429(await start(b, acct.key), 60);
    // A refused start starts (and so bills) nothing.
    assert.equal(await a.store.collections.runs.countDocuments({ account_id: acct.accountId }), 60);

    // Other requests have their own bucket, still open.
    const runId = (await a.store.collections.runs.findOne({ account_id: acct.accountId }))!._id;
    const read = await call(b.url, 'GET', `/api/v1/runs/${runId}`, { key: acct.key });
    assert.equal(read.status, 200, JSON.stringify(read.body));
    expectRateHeaders(read, 1200);
    // Another key of the same account has its own windows (D16: per key).
    const { secret } = await issueKey(a.store.collections, acct.accountId);
    const other = await start(b, secret);
    assert.equal(other.status, 202, JSON.stringify(other.body));
    expectRateHeaders(other, 60, 59);
  });

  it('puts the headers on every authenticated answer, errors and streams included, and none on a 401', async () => {
    const acct = await newAccount(a.store.collections);
    const broke = await newAccount(a.store.collections, 0);
    await freshWindow(10);
    const published = await call(a.url, 'POST', '/api/v1/workflows', {
      key: acct.key,
      body: greetingWorkflow('greet'),
    });
    assert.equal(published.status, 201);
    expectRateHeaders(published, 1200, 1199);
    const badWorkflow = await call(a.url, 'POST', '/api/v1/workflows', {
      key: acct.key,
      body: { slug: 'x', nodes: 'no' },
    });
    expectError(badWorkflow, { status: 400, type: 'invalid_request_error' });
    expectRateHeaders(badWorkflow, 1200, 1198);
    const started = await start(a, acct.key);
    assert.equal(started.status, 202);
    expectRateHeaders(started, 60, 59);
    const badInputs = await start(b, acct.key, { workflowId: 'greet', inputs: { nom: 'x' } });
    expectError(badInputs, {
      status: 400,
      type: 'invalid_request_error',
      code: 'invalid_input_fields',
    });
    expectRateHeaders(badInputs, 60, 58);
    const unknown = await start(a, acct.key, { workflowId: 'nope' });
    expectError(unknown, { status: 404, type: 'not_found_error' });
    expectRateHeaders(unknown, 60, 57);
    const tooLarge = await call(a.url, 'POST', '/api/v1/responses', {
      key: acct.key,
      body: 'x'.repeat(2 * 1024 * 1024),
    });
    expectError(tooLarge, {
      status: 413,
      type: 'invalid_request_error',
      code: 'request_too_large',
    });
    expectRateHeaders(tooLarge, 60, 56);
    await publish(a.url, broke.key, greetingWorkflow('greet'));
    const noCredit = await start(b, broke.key);
    expectError(noCredit, { status: 402, type: 'insufficient_credits' });
    expectRateHeaders(noCredit, 60, 59);
    const missingRun = await call(b.url, 'GET', '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN', {
      key: acct.key,
    });
    expectError(missingRun, { status: 404, type: 'not_found_error' });
    expectRateHeaders(missingRun, 1200, 1197);
    const read = await call(a.url, 'GET', `/api/v1/runs/${started.body.run_id}`, { key: acct.key });
    assert.equal(read.status, 200);
    expectRateHeaders(read, 1200, 1196);
    // Streams: on the SSE head of a streaming start and of a reattach.
    const stream = await openSse(`${a.url}/api/v1/responses`, {
      method: 'POST',
      key: acct.key,
      body: { workflowId: 'greet', stream: true, inputs: { name: 'x' } },
    });
    try {
      assert.equal(stream.status, 200);
      expectRateHeaders(stream, 60, 55);
    } finally {
      stream.abort();
    }
    const reattach = await openSse(`${b.url}/api/v1/runs/${started.body.run_id}/stream`, {
      key: acct.key,
    });
    try {
      assert.equal(reattach.status, 200);
      expectRateHeaders(reattach, 1200, 1195);
    } finally {
      reattach.abort();
    }
    // Not authenticated, not counted: no headers.
    const anonymous = await call(a.url, 'GET', `/api/v1/runs/${started.body.run_id}`, {
      key: 'wrs_sk_nope',
    });
    expectError(anonymous, { status: 401, type: 'authentication_error' });
    assert.equal(anonymous.headers.get('x-ratelimit-limit'), null);
  });

  it("applies an account's own limits to its existing and new keys (CLI `accounts limits`), and the defaults again after `default`", async () => {
    const acct = await newAccount(a.store.collections);
    // Published with a key of its own, so the keys under test start with empty windows.
    const { secret: publisher } = await issueKey(a.store.collections, acct.accountId);
    await publish(a.url, publisher, greetingWorkflow('greet'));
    const cli = async (...argv: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const code = await runCli(argv, {
        collections: a.store.collections,
        out: (l) => out.push(l),
        err: (l) => err.push(l),
      });
      assert.equal(code, 0, err.join('\n'));
      return out.join('\n');
    };
    assert.match(
      await cli('accounts', 'limits', acct.accountId, '--starts', '2', '--requests', '3'),
      /2 starts\/min, 3 requests\/min/,
    );
    assert.deepEqual(
      JSON.parse(await cli('accounts', 'limits', acct.accountId, '--json')).rate_limits,
      { starts_per_minute: 2, requests_per_minute: 3 },
    );
    const { secret: newKey } = await issueKey(a.store.collections, acct.accountId);
    await freshWindow(15);

    for (const key of [acct.key, newKey]) {
      for (let i = 1; i <= 2; i++) {
        const res = await start(i % 2 ? a : b, key);
        assert.equal(res.status, 202, JSON.stringify(res.body));
        expectRateHeaders(res, 2, 2 - i);
      }
      expect429(await start(b, key), 2);
      for (let i = 1; i <= 3; i++) {
        const res = await call(
          i % 2 ? a.url : b.url,
          'GET',
          '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN',
          { key },
        );
        expectRateHeaders(res, 3, 3 - i);
      }
      expect429(
        await call(a.url, 'GET', '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN', { key }),
        3,
      );
    }

    // One limit back to the default, the other kept.
    assert.match(
      await cli('accounts', 'limits', acct.accountId, '--starts', 'default'),
      /default starts\/min, 3 requests\/min/,
    );
    assert.match(
      await cli('accounts', 'show', acct.accountId),
      /rate limits\s+default starts\/min, 3 requests\/min/,
    );
    await freshWindow(5);
    const limitedReads = await call(b.url, 'GET', '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN', {
      key: acct.key,
    });
    expectRateHeaders(limitedReads, 3);
    const { secret: third } = await issueKey(a.store.collections, acct.accountId);
    const res = await start(a, third);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    expectRateHeaders(res, 60, 59);
  });

  it('takes its defaults from RATE_LIMIT_STARTS_PER_MINUTE and RATE_LIMIT_REQUESTS_PER_MINUTE', async () => {
    const svc = await startService({
      worker: false,
      env: { RATE_LIMIT_STARTS_PER_MINUTE: '1', RATE_LIMIT_REQUESTS_PER_MINUTE: '2' },
    });
    try {
      const acct = await newAccount(svc.store.collections);
      await freshWindow(10);
      const published = await call(svc.url, 'POST', '/api/v1/workflows', {
        key: acct.key,
        body: greetingWorkflow('greet'),
      });
      assert.equal(published.status, 201);
      expectRateHeaders(published, 2, 1);
      const first = await start(svc, acct.key);
      assert.equal(first.status, 202);
      expectRateHeaders(first, 1, 0);
      expect429(await start(svc, acct.key), 1);
      expectRateHeaders(
        await call(svc.url, 'GET', `/api/v1/runs/${first.body.run_id}`, { key: acct.key }),
        2,
        0,
      );
      expect429(
        await call(svc.url, 'GET', `/api/v1/runs/${first.body.run_id}`, { key: acct.key }),
        2,
      );
    } finally {
      await svc.close();
    }
  });
});
