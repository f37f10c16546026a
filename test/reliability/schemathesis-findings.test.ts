/**
 * What schemathesis (schemathesis.test.ts) found, pinned as plain requests so each stays
 * fixed even on a run whose random generation does not happen to hit it again. Each was a 5xx or
 * an answer the OpenAPI document did not allow.
 */
import assert from 'node:assert/strict';
import { expectError } from '../support/api-assert';
import { greetingWorkflow, publish } from '../support/fixtures';
import { call } from '../support/http';
import { openSse } from '../support/sse';
import { useService } from '../support/use-service';
import { startRun } from '../support/runs';

/** A one-input workflow whose input is of type json. */
const jsonWorkflow = {
  slug: 'json-in',
  nodes: [
    { id: 'data', type: 'user_input', label: 'Data', input_type: 'json' },
    { id: 'show', type: 'text', template: '{{data}}' },
    { id: 'out', type: 'user_result', label: 'Out' },
  ],
  edges: [
    { from: 'data', to: 'show', port: 'data' },
    { from: 'show', to: 'out' },
  ],
};

describe('reliability: schemathesis findings stay fixed', function () {
  this.timeout(120_000);
  // No worker: runs stay `pending`, which is all that these requests need.
  const ctx = useService({ worker: false });
  let runId: string;

  before(async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet'));
    await publish(ctx.svc.url, ctx.key, jsonWorkflow);
    runId = await startRun(ctx.svc.url, ctx.key, 'greet', { name: 'A' });
  });

  it('a workflow whose free-form fields hold keys or nested arrays the store cannot hold is a 400 naming each (was a 500 at insert)', async () => {
    const doc = greetingWorkflow('keys', 'Hi', {
      meta: { $schema: 'x', 'canvas.zoom': 1, ok: { 'a\u0000': 1 }, grid: [[1, 2]] },
    }) as any;
    doc.nodes[1].meta = { $ref: '#/x' };
    const error = expectError(
      await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key: ctx.key, body: doc }),
      {
        status: 400,
        type: 'invalid_request_error',
        code: 'invalid_workflow',
        param: 'meta.$schema',
      },
    );
    assert.deepEqual(
      error.details.map((d: any) => d.field),
      [
        'meta.$schema',
        'meta["canvas.zoom"]',
        'meta.ok["a\\u0000"]',
        'meta.grid[0]',
        'nodes[1].meta.$ref',
      ],
    );
    // The same document with storable keys and arrays publishes.
    await publish(
      ctx.svc.url,
      ctx.key,
      greetingWorkflow('keys', 'Hi', {
        meta: { schema: 'x', canvas: { zoom: 1 }, grid: [{ row: [1, 2] }] },
      }),
    );
  });

  it('a json input holding such a key or a nested array is a 400 naming it (was a 500 when the run was stored)', async () => {
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'json-in', inputs: { data: { user: { 'e.mail': 'a@b' } } } },
    });
    const error = expectError(res, {
      status: 400,
      type: 'invalid_request_error',
      code: 'invalid_input_fields',
      param: 'data',
    });
    assert.match(
      error.details[0].problem,
      /`user\["e.mail"\]`, which is a key the store cannot hold/,
    );
    const matrix = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'json-in', inputs: { data: { m: [[1, 2]] } } },
    });
    expectError(matrix, {
      status: 400,
      type: 'invalid_request_error',
      code: 'invalid_input_fields',
      message: ['`m[0]`, which is an array directly inside an array'],
    });
    const ok = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'json-in', inputs: { data: { user: { email: 'a@b' } } } },
    });
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
  });

  it('unpaired surrogate escapes are a 400 invalid_json: two such keys collided as U+FFFD (a 500), values were silently changed', async () => {
    const nodes = JSON.stringify(greetingWorkflow('x').nodes);
    const edges = JSON.stringify(greetingWorkflow('x').edges);
    const collide = `{"slug":"sur","nodes":${nodes},"edges":${edges},"meta":{"\\ud800":1,"\\ud801":2}}`;
    expectError(
      await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key: ctx.key, body: collide }),
      {
        status: 400,
        type: 'invalid_request_error',
        code: 'invalid_json',
        param: 'meta["\\ud800"]',
        message: ['unpaired UTF-16 surrogate'],
      },
    );
    const input = '{"workflowId":"greet","inputs":{"name":"A\\udc00"}}';
    expectError(
      await call(ctx.svc.url, 'POST', '/api/v1/responses', { key: ctx.key, body: input }),
      { status: 400, type: 'invalid_request_error', code: 'invalid_json', param: 'inputs.name' },
    );
    // A pair (an emoji) is Unicode text.
    const emoji = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: '{"workflowId":"greet","inputs":{"name":"\\ud83d\\ude00"}}',
    });
    assert.equal(emoji.status, 202, JSON.stringify(emoji.body));
  });

  it('a malformed starting_after is a 400 even when Last-Event-ID wins (was a 200); an empty Last-Event-ID is no cursor', async () => {
    const refused = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream?starting_after=x`, {
      key: ctx.key,
      headers: { 'last-event-id': '0' },
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.json.error.param, 'starting_after');
    // A parameter the stream does not take is refused, as on every other query (it was ignored).
    const unknown = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream?foo=1`, {
      key: ctx.key,
    });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.json.error.type, 'invalid_request_error');
    const link = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, {
      key: ctx.key,
    });
    const linked = await openSse(`${link.body.url}&foo=1`, {});
    assert.equal(linked.status, 400, 'a link with a parameter of its own added');
    const open = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream`, {
      key: ctx.key,
      headers: { 'last-event-id': '' },
    });
    try {
      assert.equal(open.status, 200);
      assert.match(open.headers.get('content-type') ?? '', /^text\/event-stream/);
    } finally {
      open.abort();
    }
  });

  it('the document says what the server does: the SSE event shape, Prefer, the Idempotency-Key rule, non-empty uploads', async () => {
    const doc = (await call(ctx.svc.url, 'GET', '/api/v1/openapi.json')).body;
    const start = doc.paths['/api/v1/responses'].post;
    // A 3.1 document (no 3.2 `itemSchema`: third-party tools read 3.1): the stream's schema is one SSE event's fields, as schemathesis
    // applies it to each event, with `data` carrying the JSON.
    const stream = start.responses['200'].content['text/event-stream'];
    assert.equal(stream.itemSchema, undefined);
    assert.equal(stream.schema.$ref, '#/components/schemas/ServerSentEvent');
    const item = doc.components.schemas.ServerSentEvent;
    assert.deepEqual(item.required, ['data']);
    assert.equal(item.else.properties.data.contentSchema.$ref, '#/components/schemas/StreamEvent');
    // D28: Prefer: wait answers 200 with the run record.
    assert.equal(
      start.responses['200'].content['application/json'].schema.$ref,
      '#/components/schemas/Run',
    );
    assert.ok(start.parameters.some((p: any) => p.name === 'Prefer'));
    const idempotency = start.parameters.find((p: any) => p.name === 'Idempotency-Key');
    assert.ok(new RegExp(idempotency.schema.pattern).test('abc-123'));
    assert.ok(!new RegExp(idempotency.schema.pattern).test('has space'));
    const upload = doc.paths['/api/v1/files'].post.requestBody.content;
    assert.equal(upload['*/*'].schema.minLength, 1);
  });
});
