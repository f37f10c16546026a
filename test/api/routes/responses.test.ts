/**
 * API surface: starting runs through POST /api/v1/responses on the real stack: the
 * async 202 (spec), workflow and version resolution (D1, D2), D4 input errors and credits (D17).
 */
import assert from 'node:assert/strict';
import { addCredits } from '../../../store/accounts';
import { detailFor, expectError, ISO_DATE_TIME } from '../../support/api-assert';
import {
  firstText,
  greetingWorkflow,
  publish,
  typedInputsWorkflow,
  waitForRun,
} from '../../support/fixtures';
import { call, waitFor, type ApiResponse } from '../../support/http';
import type { TestService } from '../../support/service';
import { useService } from '../../support/use-service';

const ULID = '[0-7][0-9A-HJKMNP-TV-Z]{25}';
const UNKNOWN_WF = 'wf_01M80PPBX9RF5HM3DRB6JSVJ89';
const UNKNOWN_WFV = 'wfv_01M80PPBXCJSBHBQGF510HVEJN';

const start = (svc: TestService, key: string, body: unknown): Promise<ApiResponse> =>
  call(svc.url, 'POST', '/api/v1/responses', { key, body });

/** Asserts an async start: 202 and exactly the spec's five fields. */
function expectStarted(res: ApiResponse, workflowId: string, versionId: string): string {
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.deepEqual(
    Object.keys(res.body).sort(),
    ['created_at', 'published_workflow_id', 'published_workflow_version_id', 'run_id', 'status'],
    JSON.stringify(res.body),
  );
  assert.match(res.body.run_id, new RegExp(`^run_${ULID}$`));
  assert.equal(res.body.status, 'pending');
  assert.equal(res.body.published_workflow_id, workflowId);
  assert.equal(res.body.published_workflow_version_id, versionId);
  assert.match(res.body.created_at, ISO_DATE_TIME);
  assert.ok(Math.abs(Date.parse(res.body.created_at) - Date.now()) < 60_000, res.body.created_at);
  assert.equal(res.headers.get('access-control-allow-origin'), '*');
  return res.body.run_id;
}

describe('API responses: starting runs (spec POST /api/v1/responses, D1, D2)', function () {
  this.timeout(120_000);
  const ctx = useService();
  let v1: any;
  let v2: any;

  before(async () => {
    v1 = await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet', 'Hello'));
    v2 = await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet', 'Howdy'));
  });

  it('answers 202 with exactly run_id, status, published_workflow_id, published_workflow_version_id, created_at', async () => {
    const runId = expectStarted(
      await start(ctx.svc, ctx.key, { workflowId: 'greet', inputs: { name: 'Ada' } }),
      v1.workflow_id,
      v2.version_id,
    );
    // The run is readable the moment its id is returned.
    const read = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.id, runId);
    assert.equal(
      firstText(await waitForRun(ctx.svc.url, ctx.key, runId), 'greeting'),
      'Howdy, Ada!',
    );
  });

  it('accepts `stream: false` explicitly as the async mode', async () => {
    expectStarted(
      await start(ctx.svc, ctx.key, { workflowId: 'greet', stream: false, inputs: { name: 'Bo' } }),
      v1.workflow_id,
      v2.version_id,
    );
  });

  it('resolves the workflow by slug and by wf_ id alike', async () => {
    const bySlug = expectStarted(
      await start(ctx.svc, ctx.key, { workflowId: 'greet', inputs: { name: 'S' } }),
      v1.workflow_id,
      v2.version_id,
    );
    const byId = expectStarted(
      await start(ctx.svc, ctx.key, { workflowId: v1.workflow_id, inputs: { name: 'I' } }),
      v1.workflow_id,
      v2.version_id,
    );
    assert.notEqual(bySlug, byId);
    assert.equal(firstText(await waitForRun(ctx.svc.url, ctx.key, byId), 'greeting'), 'Howdy, I!');
  });

  it('pins a version by number and by wfv_ id (D1); without a pin the latest runs', async () => {
    const one = expectStarted(
      await start(ctx.svc, ctx.key, { workflowId: 'greet', version: 1, inputs: { name: 'One' } }),
      v1.workflow_id,
      v1.version_id,
    );
    const two = expectStarted(
      await start(ctx.svc, ctx.key, {
        workflowId: v1.workflow_id,
        version: 2,
        inputs: { name: 'Two' },
      }),
      v1.workflow_id,
      v2.version_id,
    );
    const byId = expectStarted(
      await start(ctx.svc, ctx.key, {
        workflowId: 'greet',
        version: v1.version_id,
        inputs: { name: 'Pinned' },
      }),
      v1.workflow_id,
      v1.version_id,
    );
    // The pinned version is the one that actually ran, not only the one reported.
    assert.equal(firstText(await waitForRun(ctx.svc.url, ctx.key, one), 'greeting'), 'Hello, One!');
    assert.equal(firstText(await waitForRun(ctx.svc.url, ctx.key, two), 'greeting'), 'Howdy, Two!');
    const pinned = await waitForRun(ctx.svc.url, ctx.key, byId);
    assert.equal(firstText(pinned, 'greeting'), 'Hello, Pinned!');
    assert.equal(pinned.published_workflow_version_id, v1.version_id);
  });

  it('answers an unknown workflow id or slug with 404 published_workflow_not_found', async () => {
    for (const workflowId of [UNKNOWN_WF, 'no-such-slug', 'wf_not-an-id', 'GREET', v1.version_id]) {
      const res = await start(ctx.svc, ctx.key, { workflowId, inputs: { name: 'x' } });
      expectError(res, {
        status: 404,
        type: 'not_found_error',
        code: 'published_workflow_not_found',
        message: [workflowId],
      });
    }
  });

  it("answers another account's wf_ id or slug with 404 published_workflow_not_found", async () => {
    const other = await ctx.newAccount();
    const theirs = await publish(ctx.svc.url, other.key, greetingWorkflow('private-greet'));
    for (const workflowId of [theirs.workflow_id, 'private-greet']) {
      const res = await start(ctx.svc, ctx.key, { workflowId, inputs: { name: 'x' } });
      expectError(res, {
        status: 404,
        type: 'not_found_error',
        code: 'published_workflow_not_found',
      });
    }
    // Indistinguishable from a workflow that does not exist: same status, type and code, and no owner leaked.
    const res = await start(ctx.svc, ctx.key, {
      workflowId: theirs.workflow_id,
      inputs: { name: 'x' },
    });
    assert.ok(!JSON.stringify(res.body).includes(other.accountId));
    // And the owner can run it.
    expectStarted(
      await start(ctx.svc, other.key, { workflowId: 'private-greet', inputs: { name: 'x' } }),
      theirs.workflow_id,
      theirs.version_id,
    );
  });

  it("runs another account's public workflow by wf_ id (not by slug), and bills the caller", async () => {
    const owner = await ctx.newAccount();
    const pub = await publish(
      ctx.svc.url,
      owner.key,
      greetingWorkflow('public-greet', 'Welcome', { public: true }),
    );
    const caller = await ctx.newAccount();
    const runId = expectStarted(
      await start(ctx.svc, caller.key, { workflowId: pub.workflow_id, inputs: { name: 'Guest' } }),
      pub.workflow_id,
      pub.version_id,
    );
    const run = await waitForRun(ctx.svc.url, caller.key, runId);
    assert.equal(firstText(run, 'greeting'), 'Welcome, Guest!');
    // D17: the caller, who started it, pays; the owner does not.
    const debits = (accountId: string) =>
      ctx.svc.store.collections.ledger.find({ account_id: accountId, kind: 'run' }).toArray();
    const paid = await waitFor(
      async () =>
        (await debits(caller.accountId)).length > 0 ? debits(caller.accountId) : undefined,
      {
        what: 'the run debit',
      },
    );
    assert.deepEqual(
      paid.map((e) => e.run_id),
      [runId],
    );
    assert.ok(paid[0].amount_usd < 0);
    assert.equal((await debits(owner.accountId)).length, 0);
    // The run belongs to the caller, not to the workflow's owner.
    expectError(await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: owner.key }), {
      status: 404,
      type: 'not_found_error',
      code: 'not_found',
    });
    // A slug is resolved in the caller's own account only (D2).
    expectError(
      await start(ctx.svc, caller.key, { workflowId: 'public-greet', inputs: { name: 'x' } }),
      {
        status: 404,
        type: 'not_found_error',
        code: 'published_workflow_not_found',
      },
    );
  });

  it('answers an unknown version number or id with 404 published_workflow_version_not_found', async () => {
    const other = await publish(ctx.svc.url, ctx.key, greetingWorkflow('other-greet'));
    // Version 3 does not exist; a wfv_ id that does not exist; a real version id of another workflow.
    for (const version of [3, 999, UNKNOWN_WFV, other.version_id]) {
      const res = await start(ctx.svc, ctx.key, {
        workflowId: 'greet',
        version,
        inputs: { name: 'x' },
      });
      expectError(res, {
        status: 404,
        type: 'not_found_error',
        code: 'published_workflow_version_not_found',
        message: [String(version)],
      });
    }
  });

  it('answers a version that is neither a positive integer nor an id with 400', async () => {
    // A number in a string or a word is neither: said so, not "no such version".
    const forms = '`version` must be a version number (1, 2, …) or a version id (`wfv_…`)';
    const cases: [unknown, string][] = [
      ...[0, -1, 1.5, true, null, {}, [1], ''].map((v): [unknown, string] => [v, '`version`']),
      ['1', forms],
      ['latest', forms],
    ];
    for (const [version, message] of cases) {
      const res = await start(ctx.svc, ctx.key, {
        workflowId: 'greet',
        version,
        inputs: { name: 'x' },
      });
      expectError(res, {
        status: 400,
        type: 'invalid_request_error',
        param: 'version',
        message: [message],
      });
    }
  });

  it('answers an unknown top-level field with 400 naming it', async () => {
    for (const field of ['workflow_id', 'input', 'webhooks', '__proto__x']) {
      const res = await start(ctx.svc, ctx.key, {
        workflowId: 'greet',
        inputs: { name: 'x' },
        [field]: 1,
      });
      const error = expectError(res, {
        status: 400,
        type: 'invalid_request_error',
        param: field,
        message: [`\`${field}\``],
      });
      assert.match(detailFor(error, field), /not a field/);
    }
  });

  it('answers a non-boolean `stream` with 400', async () => {
    for (const stream of ['true', 1, 0, null, 'yes', {}]) {
      const res = await start(ctx.svc, ctx.key, {
        workflowId: 'greet',
        stream,
        inputs: { name: 'x' },
      });
      const error = expectError(res, {
        status: 400,
        type: 'invalid_request_error',
        param: 'stream',
        message: ['`stream`'],
      });
      // A wrong type, not a missing field.
      assert.match(detailFor(error, 'stream'), /must be a boolean, not /);
    }
  });

  it('answers a missing or mistyped workflowId, or a body that is not an object, with 400', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ inputs: { name: 'x' } }, /is required/],
      [{ workflowId: 42 }, /must be a string, not a number/],
      [{ workflowId: null }, /must be a string, not null/],
      [{ workflowId: '' }, /must not be empty/],
      [{ workflowId: 'x'.repeat(300) }, /at most 256 characters/],
    ];
    for (const [body, problem] of cases) {
      const error = expectError(await start(ctx.svc, ctx.key, body), {
        status: 400,
        type: 'invalid_request_error',
        param: 'workflowId',
      });
      assert.ok(error.message.includes('`workflowId`'), error.message);
      assert.match(detailFor(error, 'workflowId'), problem);
    }
    for (const body of ['[]', 'null', '"greet"', '7']) {
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body,
        headers: { 'content-type': 'application/json' },
      });
      expectError(res, { status: 400, type: 'invalid_request_error' });
    }
  });
});

describe('API responses: input errors (D4)', function () {
  this.timeout(120_000);
  const ctx = useService();
  let wf: any;
  const valid = { product_name: 'Widget', count: 3, gift_wrap: true };

  before(async () => {
    wf = await publish(ctx.svc.url, ctx.key, typedInputsWorkflow('typed'));
  });

  /** Starts with these inputs and asserts the D4 error; returns the error object. */
  async function inputError(inputs: unknown, fields: string[]): Promise<any> {
    const before = await ctx.svc.store.collections.runs.countDocuments({});
    const res = await start(ctx.svc, ctx.key, { workflowId: 'typed', inputs });
    const error = expectError(res, {
      status: 400,
      type: 'invalid_request_error',
      code: 'invalid_input_fields',
    });
    assert.deepEqual(
      error.details.map((d: any) => d.field).sort(),
      [...fields].sort(),
      `one details entry per offending field: ${JSON.stringify(error.details)}`,
    );
    for (const d of error.details) {
      assert.deepEqual(Object.keys(d).sort(), ['field', 'problem']);
      assert.ok(d.problem.length > 0);
      assert.ok(
        error.message.includes(`\`${d.field}\``),
        `message lacks ${d.field}: ${error.message}`,
      );
    }
    assert.equal(error.param, error.details[0].field, 'param is the first offending key');
    assert.ok(fields.includes(error.param));
    assert.equal(
      await ctx.svc.store.collections.runs.countDocuments({}),
      before,
      'a refused start creates no run',
    );
    return error;
  }

  it('reports an unknown key, listing the inputs there are', async () => {
    const error = await inputError({ ...valid, colour: 'red' }, ['colour']);
    assert.equal(error.param, 'colour');
    assert.match(detailFor(error, 'colour'), /not an input/);
    assert.match(detailFor(error, 'colour'), /`product_name`/);
  });

  it('reports a key that normalizes to a known label with its correct spelling', async () => {
    for (const near of ['Product Name', 'product-name', 'PRODUCT_NAME', ' product name ']) {
      const { product_name, ...rest } = valid;
      const error = await inputError({ ...rest, [near]: product_name }, [near, 'product_name']);
      assert.match(detailFor(error, near), /did you mean `product_name`\?/);
      assert.match(error.message, /did you mean `product_name`\?/);
    }
    // The hint also shows next to a correct key (a duplicate under another spelling).
    const error = await inputError({ ...valid, 'Gift Wrap?': false }, ['Gift Wrap?']);
    assert.match(detailFor(error, 'Gift Wrap?'), /did you mean `gift_wrap`\?/);
  });

  it('reports every missing required input, but not one with a default', async () => {
    const error = await inputError({}, ['product_name', 'count', 'gift_wrap']);
    for (const f of ['product_name', 'count', 'gift_wrap'])
      assert.match(detailFor(error, f), /is required/);
    assert.equal(error.param, 'product_name');
    // `inputs` left out altogether is the same as `{}`.
    await inputError(undefined, ['product_name', 'count', 'gift_wrap']);
  });

  it('reports a wrong type for text, number and boolean inputs', async () => {
    for (const bad of [42, true, null, ['Widget'], { name: 'Widget' }]) {
      const error = await inputError({ ...valid, product_name: bad }, ['product_name']);
      assert.match(detailFor(error, 'product_name'), /must be a string/);
    }
    for (const bad of ['3', null, true, [3], {}]) {
      const error = await inputError({ ...valid, count: bad }, ['count']);
      assert.match(detailFor(error, 'count'), /must be a number/);
    }
    for (const bad of ['true', 1, 0, null, 'false']) {
      const error = await inputError({ ...valid, gift_wrap: bad }, ['gift_wrap']);
      assert.match(detailFor(error, 'gift_wrap'), /must be a boolean/);
    }
    // An optional input given a wrong value is reported too (its default does not hide the mistake).
    const error = await inputError({ ...valid, tone: 7 }, ['tone']);
    assert.match(detailFor(error, 'tone'), /must be a string/);
  });

  it('lists several errors at once', async () => {
    const error = await inputError(
      { product_name: 1, count: 'many', 'Gift Wrap': true, colour: 'red' },
      ['product_name', 'count', 'gift_wrap', 'Gift Wrap', 'colour'],
    );
    assert.match(detailFor(error, 'product_name'), /must be a string/);
    assert.match(detailFor(error, 'count'), /must be a number/);
    assert.match(detailFor(error, 'gift_wrap'), /is required/);
    assert.match(detailFor(error, 'Gift Wrap'), /did you mean `gift_wrap`\?/);
    assert.match(detailFor(error, 'colour'), /not an input/);
  });

  it('treats prototype-looking keys as plain unknown keys', async () => {
    // Raw JSON, so that `__proto__` is sent as an own key (JSON.parse makes it one).
    const body = `{"workflowId":"typed","inputs":{"product_name":"W","count":1,"gift_wrap":true,"__proto__":{"tone":"evil"},"constructor":"x"}}`;
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body,
      headers: { 'content-type': 'application/json' },
    });
    const error = expectError(res, {
      status: 400,
      type: 'invalid_request_error',
      code: 'invalid_input_fields',
    });
    assert.deepEqual(error.details.map((d: any) => d.field).sort(), ['__proto__', 'constructor']);
    const top = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: '{"workflowId":"typed","__proto__":{"stream":true}}',
      headers: { 'content-type': 'application/json' },
    });
    expectError(top, { status: 400, type: 'invalid_request_error', param: '__proto__' });
  });

  it('reports `inputs` that is not an object', async () => {
    for (const bad of ['Widget', 42, true, null, [], [valid]]) {
      const error = await inputError(bad, ['inputs']);
      assert.match(detailFor(error, 'inputs'), /must be an object/);
    }
  });

  it('applies the default of an optional input left out, and uses a given value over it', async () => {
    const withDefault = await start(ctx.svc, ctx.key, { workflowId: 'typed', inputs: valid });
    assert.equal(withDefault.status, 202, JSON.stringify(withDefault.body));
    assert.equal(withDefault.body.published_workflow_version_id, wf.version_id);
    const given = await start(ctx.svc, ctx.key, {
      workflowId: 'typed',
      inputs: { ...valid, tone: 'formal', gift_wrap: false, count: 2.5 },
    });
    assert.equal(given.status, 202, JSON.stringify(given.body));

    assert.equal(
      firstText(await waitForRun(ctx.svc.url, ctx.key, withDefault.body.run_id), 'line'),
      'Widget|3|true|friendly',
    );
    assert.equal(
      firstText(await waitForRun(ctx.svc.url, ctx.key, given.body.run_id), 'line'),
      'Widget|2.5|false|formal',
    );
  });
});

describe('API responses: credits (D17)', function () {
  this.timeout(120_000);
  const ctx = useService({ account: false });

  it('refuses a start at zero balance with 402 insufficient_credits and records no run', async () => {
    const broke = await ctx.newAccount(0);
    // Publishing is free; only starting a run needs credit.
    await publish(ctx.svc.url, broke.key, greetingWorkflow('greet'));
    const before = await ctx.svc.store.collections.runs.countDocuments({});
    const res = await start(ctx.svc, broke.key, { workflowId: 'greet', inputs: { name: 'x' } });
    expectError(res, {
      status: 402,
      type: 'insufficient_credits',
      code: 'insufficient_credits',
      message: [/credit/i],
    });
    assert.equal(await ctx.svc.store.collections.runs.countDocuments({}), before);
    assert.equal(
      await ctx.svc.store.collections.runs.countDocuments({ account_id: broke.accountId }),
      0,
    );
    assert.equal(
      await ctx.svc.store.collections.ledger.countDocuments({
        account_id: broke.accountId,
        kind: { $ne: 'credit' },
      }),
      0,
    );
  });

  it('refuses a start with a negative balance, and accepts one once credits are added', async () => {
    const acct = await ctx.newAccount(1);
    await publish(ctx.svc.url, acct.key, greetingWorkflow('greet'));
    await addCredits(ctx.svc.store.collections, acct.accountId, -1.5, 'test: overdrawn');
    const res = await start(ctx.svc, acct.key, { workflowId: 'greet', inputs: { name: 'x' } });
    expectError(res, { status: 402, type: 'insufficient_credits', code: 'insufficient_credits' });
    assert.equal(
      await ctx.svc.store.collections.runs.countDocuments({ account_id: acct.accountId }),
      0,
    );

    await addCredits(ctx.svc.store.collections, acct.accountId, 5, 'test: top-up');
    const ok = await start(ctx.svc, acct.key, { workflowId: 'greet', inputs: { name: 'x' } });
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    assert.equal(
      await ctx.svc.store.collections.runs.countDocuments({ account_id: acct.accountId }),
      1,
    );
  });
});
