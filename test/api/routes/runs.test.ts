/** API surface: reading runs through GET /api/v1/runs/{runId} on the real stack (spec "Run", D5, ownership). */
import assert from 'node:assert/strict';
import http from 'node:http';
import { assertCors, expectError, ISO_DATE_TIME } from '../../support/api-assert';
import { greetingWorkflow, publish, waitForRun } from '../../support/fixtures';
import { call, readResponse, type ApiResponse } from '../../support/http';
import { useService } from '../../support/use-service';
import { startRun } from '../../support/runs';

const RUN_FIELDS = [
  'completed_at',
  'created_at',
  'error',
  'id',
  'metadata', // D37
  'output',
  'parent_run_id', // D38
  'published_workflow_id',
  'published_workflow_version_id',
  'status',
  'total_cost',
  'usage', // D36
  'webhook',
];

/** A GET with the path sent byte for byte (fetch would resolve `..` segments before sending). */
function rawGet(baseUrl: string, path: string, key: string): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      baseUrl + '/',
      { method: 'GET', path, headers: { authorization: `Bearer ${key}` } },
      (res) => {
        readResponse(res).then(resolve, reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('API runs: reading a run (spec GET /api/v1/runs/{runId})', function () {
  this.timeout(120_000);
  const ctx = useService();
  let wf: any;

  before(async () => {
    wf = await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet'));
  });

  it('answers an unknown run id with 404 not_found_error / not_found', async () => {
    const res = await call(ctx.svc.url, 'GET', '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN', {
      key: ctx.key,
    });
    expectError(res, {
      status: 404,
      type: 'not_found_error',
      code: 'not_found',
      message: ['run_01M80PPBY8DSJEHN3X944NVJTN'],
    });
  });

  it('answers malformed run ids with 404, never 400 or 500', async () => {
    const ids = [
      '..%2F..%2Fetc',
      '%2E%2E%2F%2E%2E%2Fetc%2Fpasswd',
      'run_',
      'run_01m80ppby8dsjehn3x944nvjtn', // lower case is not a ULID
      'item_01M80PPBYT6MSQ5KK2AKSDHXKK', // another id type
      wf.workflow_id,
      '%00',
      '%7B%22%24ne%22%3A1%7D', // {"$ne":1}
      '%E2%80%AE',
      '%FF', // not UTF-8 when decoded
      'run_' + 'A'.repeat(5000),
    ];
    for (const id of ids) {
      const res = await call(ctx.svc.url, 'GET', `/api/v1/runs/${id}`, { key: ctx.key });
      const error = expectError(res, { status: 404, type: 'not_found_error', code: 'not_found' });
      assert.ok(
        error.message.length < 200,
        `message echoes the whole id: ${error.message.length} chars`,
      );
    }
    // Dot segments sent as they are: no route, still the envelope.
    for (const path of [
      '/api/v1/runs/../../etc',
      '/api/v1/runs/../../../../etc/passwd',
      '/api/v1/runs/./run_x/..',
    ]) {
      expectError(await rawGet(ctx.svc.url, path, ctx.key), {
        status: 404,
        type: 'not_found_error',
        code: 'not_found',
      });
    }
  });

  it('answers a 100 KB run id with 431 in the envelope, and keeps serving', async () => {
    // Node refuses a request line over its 16 KiB header limit before the app sees it; the
    // server's clientError handler still answers with the envelope and CORS.
    for (const id of ['a'.repeat(100 * 1024), 'run_' + 'Z'.repeat(100 * 1024)]) {
      const res = await rawGet(ctx.svc.url, `/api/v1/runs/${id}`, ctx.key);
      expectError(res, { status: 431, type: 'invalid_request_error', code: 'request_too_large' });
    }
    const ok = await call(ctx.svc.url, 'GET', '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN', {
      key: ctx.key,
    });
    expectError(ok, { status: 404, type: 'not_found_error', code: 'not_found' });
  });

  it("answers another account's run with the same 404 as an unknown one", async () => {
    const runId = await startRun(ctx.svc.url, ctx.key, 'greet', { name: 'Ada' });
    const other = await ctx.newAccount();
    const theirs = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: other.key });
    const error = expectError(theirs, { status: 404, type: 'not_found_error', code: 'not_found' });
    assert.ok(!JSON.stringify(theirs.body).includes(ctx.accountId), 'no owner in the answer');
    // Same shape as a run that does not exist (only the echoed id differs).
    const missing = await call(ctx.svc.url, 'GET', '/api/v1/runs/run_01M80PPBY8DSJEHN3X944NVJTN', {
      key: other.key,
    });
    assert.equal(
      error.message.replace(runId, '<id>'),
      missing.body.error.message.replace('run_01M80PPBY8DSJEHN3X944NVJTN', '<id>'),
    );
    // The owner still reads it.
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, runId)).id, runId);
  });

  it('returns a completed run with exactly the spec fields', async () => {
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'greet', inputs: { name: 'Grace' } },
    });
    assert.equal(start.status, 202, JSON.stringify(start.body));
    const run = await waitForRun(ctx.svc.url, ctx.key, start.body.run_id);
    const res = await call(ctx.svc.url, 'GET', `/api/v1/runs/${start.body.run_id}`, {
      key: ctx.key,
    });
    assert.equal(res.status, 200);
    assertCors(res);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(res.body, run, 'a terminal run reads the same every time');
    assert.deepEqual(Object.keys(run).sort(), RUN_FIELDS);

    assert.equal(run.id, start.body.run_id);
    assert.equal(run.status, 'completed');
    assert.equal(run.published_workflow_id, wf.workflow_id);
    assert.equal(run.published_workflow_version_id, wf.version_id);
    assert.equal(run.error, null);
    assert.equal(typeof run.total_cost, 'number');
    assert.ok(run.total_cost > 0, `total_cost ${run.total_cost}`);
    assert.equal(run.created_at, start.body.created_at);
    assert.match(run.created_at, ISO_DATE_TIME);
    assert.match(run.completed_at, ISO_DATE_TIME);
    assert.ok(Date.parse(run.completed_at) >= Date.parse(run.created_at));

    // Output: keys are the User Result keys; items ordered from 0 with the item fields.
    assert.deepEqual(Object.keys(run.output), ['greeting']);
    const [item] = run.output.greeting;
    assert.equal(run.output.greeting.length, 1);
    assert.match(item.id, /^item_[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
    assert.equal(item.item_index, 0);
    assert.equal(item.status, 'completed');
    assert.deepEqual(item.parts, [{ type: 'text', text: 'Hello, Grace!' }]);
  });
});

describe('API runs: reading a run nobody has picked up yet', function () {
  this.timeout(120_000);
  // A query deadline far above any read's own time on a loaded machine: a read that waited for it would show.
  const QUERY_TIMEOUT_MS = 20_000;
  const ctx = useService({
    account: false,
    worker: false,
    env: { QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS) },
  });

  it('shows it pending with the spec fields and nulls where nothing happened yet', async () => {
    const { key } = await ctx.newAccount();
    const wf = await publish(ctx.svc.url, key, greetingWorkflow('greet'));
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'greet', inputs: { name: 'x' } },
    });
    assert.equal(start.status, 202, JSON.stringify(start.body));
    const t0 = Date.now();
    const res = await call(ctx.svc.url, 'GET', `/api/v1/runs/${start.body.run_id}`, { key });
    // Safe to poll every second: a queued run must not hold the read until a Temporal query times out.
    assert.ok(
      Date.now() - t0 < QUERY_TIMEOUT_MS / 2,
      `reading a pending run took ${Date.now() - t0} ms`,
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body).sort(), RUN_FIELDS);
    assert.deepEqual(res.body, {
      id: start.body.run_id,
      status: 'pending',
      published_workflow_id: wf.workflow_id,
      published_workflow_version_id: wf.version_id,
      output: null,
      error: null,
      total_cost: null,
      created_at: start.body.created_at,
      completed_at: null,
      webhook: null,
      metadata: {},
      parent_run_id: null,
      usage: { provider_calls: 0, input_tokens: 0, output_tokens: 0, by_node: {} }, // D36
    });

    // Once a worker comes, the same run goes on to completion.
    await ctx.svc.startWorker();
    const run = await waitForRun(ctx.svc.url, key, start.body.run_id);
    assert.equal(run.status, 'completed');
    assert.equal(run.output.greeting[0].parts[0].text, 'Hello, x!');
  });
});
