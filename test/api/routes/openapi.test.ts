// The OpenAPI document (D25) against the running server. Every route the app
// serves is documented and every documented operation is served; each operation is called for
// real, and every answer must have a documented status whose schema (ajv, draft 2020-12) its
// JSON body matches; streams are checked event by event against the StreamEvent schema.
import assert from 'node:assert/strict';
import { createApp } from '../../../api/app';
import { createLogger } from '../../../api/logger';
import { setAccountRateLimits } from '../../../store/accounts';
import { greetingWorkflow, llmWorkflow } from '../../support/fixtures';
import { call, waitFor, type ApiResponse } from '../../support/http';
import { openSse } from '../../support/sse';
import { Conformance, METHODS } from '../../support/openapi-conformance';
import { useService } from '../../support/use-service';

const slowLlm = llmWorkflow('slow');

/** A well-formed id that names nothing. */
const NO_RUN = 'run_01J00000000000000000000000';
const NO_FILE = 'file_01J00000000000000000000000';

/** Raw fetch answers in the shape support/http.ts returns (for bodies call() cannot send or read). */
async function fetchAnswer(url: string, init: RequestInit = {}): Promise<ApiResponse> {
  const res = await fetch(url, init);
  const type = res.headers.get('content-type') ?? '';
  const bytes = Buffer.from(await res.arrayBuffer());
  const body = type.startsWith('application/json')
    ? JSON.parse(bytes.toString('utf8'))
    : bytes.length
      ? bytes.toString('latin1')
      : null;
  return { status: res.status, headers: res.headers, body };
}

const CODEC_TOKEN = 'openapi-codec-token-'.padEnd(40, '0');

describe('OpenAPI document conformance (D25)', function () {
  this.timeout(60_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: {
      MAX_JSON_BODY_BYTES: '20000',
      MAX_UPLOAD_BYTES: '50000',
      WEBHOOK_ALLOW_HTTP: 'true',
      CODEC_TOKEN: CODEC_TOKEN,
    },
  });
  let spec: Conformance;

  before(async () => {
    const res = await call(ctx.svc.url, 'GET', '/api/v1/openapi.json');
    assert.equal(res.status, 200);
    spec = new Conformance(res.body);
    spec.check('GET', '/api/v1/openapi.json', res);
  });

  /** Calls a documented operation and checks the answer against the document. */
  const op = async (
    method: string,
    template: string,
    path: string,
    opts: Parameters<typeof call>[3] = {},
  ) => spec.check(method, template, await call(ctx.svc.url, method, path, opts));

  it('is OpenAPI 3.1 with the component schemas it refers to', () => {
    assert.match(spec.doc.openapi, /^3\.1\.\d+$/);
    assert.equal(spec.doc.info.version, '1.0.0');
    const text = JSON.stringify(spec.doc);
    for (const [, name] of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      assert.ok(spec.doc.components.schemas[name], `dangling $ref to ${name}`);
    }
    for (const name of ['StartRequest', 'AsyncStart', 'Run', 'Error', 'StreamEvent'])
      assert.ok(spec.doc.components.schemas[name], name);
    assert.ok(
      spec.doc.components.schemas.StartRequest.properties.webhook,
      'the D20 webhook field is documented',
    );
    // The checker itself is not vacuous: a wrong body and an undocumented status fail it.
    assert.throws(
      () =>
        spec.validate(
          { $ref: '#/components/schemas/Run' },
          { id: 'run_x', status: 'done' },
          'a wrong run',
        ),
      /does not match/,
    );
    assert.throws(
      () => spec.check('GET', '/healthz', { status: 418, headers: new Headers(), body: null }),
      /does not list/,
    );
  });

  it('documents exactly the routes the app serves', () => {
    // The routers of a real app built from the service's dependencies (nothing listens).
    const app = createApp({
      config: ctx.svc.config,
      db: ctx.svc.store.db,
      collections: ctx.svc.store.collections,
      gateway: ctx.svc.api.gateway,
      pollers: ctx.svc.api.pollers,
      logger: createLogger('silent'),
    });
    const served = new Set<string>();
    for (const middleware of app.middleware as Array<{
      router?: { stack: Array<{ path: string; methods: string[] }> };
    }>) {
      for (const layer of middleware.router?.stack ?? []) {
        const path = layer.path.replace(/:(\w+)/g, '{$1}');
        for (const method of layer.methods)
          if (METHODS.includes(method.toLowerCase() as never)) served.add(`${method} ${path}`);
      }
    }
    assert.ok(served.size >= 10, [...served].join(', '));
    const documented = new Set(spec.operations());
    assert.deepEqual(
      [...served].filter((r) => !documented.has(r)),
      [],
      'served but not documented',
    );
    assert.deepEqual(
      [...documented].filter((r) => !served.has(r)),
      [],
      'documented but not served',
    );
  });

  it('every authenticated operation answers 401 without a key, as documented', async () => {
    for (const operation of spec.operations()) {
      const [method, template] = operation.split(' ');
      const documented = spec.doc.paths[template][method.toLowerCase()];
      if (Array.isArray(documented.security) && documented.security.length === 0) continue; // public
      const path = template
        .replace('{runId}', NO_RUN)
        .replace('{fileId}', NO_FILE)
        .replace('{workflowId}', 'nothing');
      const res = await op(method, template, path, method === 'POST' ? { body: {} } : {});
      assert.equal(res.status, 401, `${operation} without a key answered ${res.status}`);
    }
  });

  it('starting a run: 202, a stream whose every event matches StreamEvent, and the documented refusals', async () => {
    const published = await op('POST', '/api/v1/workflows', '/api/v1/workflows', {
      key: ctx.key,
      body: greetingWorkflow('greet'),
    });
    assert.equal(published.status, 201);
    const start = (body: unknown, headers: Record<string, string> = {}) =>
      op('POST', '/api/v1/responses', '/api/v1/responses', { key: ctx.key, body, headers });

    const accepted = await start(
      { workflowId: 'greet', inputs: { name: 'Ada' }, webhook: 'http://localhost:9/never' },
      { 'idempotency-key': 'conformance-1' },
    );
    assert.equal(accepted.status, 202);
    const stream = await openSse(`${ctx.svc.url}/api/v1/responses`, {
      method: 'POST',
      key: ctx.key,
      body: { workflowId: 'greet', stream: true, inputs: { name: 'Bo' } },
    });
    await stream.closed;
    spec.checkStream('POST', '/api/v1/responses', stream);
    assert.equal(stream.frames.at(-1)?.data, '[DONE]');

    assert.equal(
      (await start({ workflowId: 'greet', inputs: { name: 'Ada' }, stram: true })).status,
      400,
    );
    assert.equal((await start({ workflowId: 'greet', inputs: {} })).status, 400);
    assert.equal(
      (await start({ workflowId: 'greet', inputs: { name: 'Ada' }, webhook: 'not a url' })).status,
      400,
    );
    assert.equal((await start({ workflowId: 'missing' })).status, 404);
    assert.equal((await start({ workflowId: 'greet', version: 99 })).status, 404);
    assert.equal(
      (
        await start(
          { workflowId: 'greet', inputs: { name: 'Other' } },
          { 'idempotency-key': 'conformance-1' },
        )
      ).status,
      409,
    );
    assert.equal((await start('{"workflowId":', {})).status, 400);
    assert.equal(
      (
        await op('POST', '/api/v1/responses', '/api/v1/responses', {
          key: ctx.key,
          body: 'workflowId=greet',
          headers: { 'content-type': 'text/plain' },
        })
      ).status,
      415,
    );
    assert.equal(
      (await start({ workflowId: 'greet', inputs: { name: 'x'.repeat(30_000) } })).status,
      413,
    );

    // 402: an account without credit (its own workflow, so the credit check is what refuses).
    const broke = await ctx.newAccount(0);
    await op('POST', '/api/v1/workflows', '/api/v1/workflows', {
      key: broke.key,
      body: greetingWorkflow('greet'),
    });
    assert.equal(
      (
        await op('POST', '/api/v1/responses', '/api/v1/responses', {
          key: broke.key,
          body: { workflowId: 'greet', inputs: { name: 'x' } },
        })
      ).status,
      402,
    );

    // 422: a stored graph that cannot run.
    const corrupt = await op('POST', '/api/v1/workflows', '/api/v1/workflows', {
      key: ctx.key,
      body: greetingWorkflow('corrupt'),
    });
    await ctx.svc.store.collections.workflowVersions.updateOne(
      { _id: corrupt.body.version_id },
      { $unset: { graph: '' } },
    );
    assert.equal((await start({ workflowId: 'corrupt', inputs: { name: 'x' } })).status, 422);
  });

  it('publishing: 201 and the documented refusals', async () => {
    const publish = (body: unknown, headers: Record<string, string> = {}) =>
      op('POST', '/api/v1/workflows', '/api/v1/workflows', { key: ctx.key, body, headers });
    assert.equal((await publish(greetingWorkflow('published'))).status, 201);
    assert.equal(
      (await publish({ slug: 'bad', nodes: [{ id: 'x', type: 'nope' }], edges: [] })).status,
      400,
    );
    assert.equal((await publish('{}', { 'content-type': 'text/plain' })).status, 415);
    assert.equal(
      (await publish({ ...greetingWorkflow('big'), name: 'x'.repeat(30_000) })).status,
      413,
    );
  });

  it('reading, listing, streaming and cancelling runs, and the documented refusals', async () => {
    await op('POST', '/api/v1/workflows', '/api/v1/workflows', {
      key: ctx.key,
      body: greetingWorkflow('reads'),
    });
    await op('POST', '/api/v1/workflows', '/api/v1/workflows', { key: ctx.key, body: slowLlm });
    const started = await op('POST', '/api/v1/responses', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'reads', inputs: { name: 'Cy' } },
    });
    const runId = started.body.run_id;
    const run = await waitFor(async () => {
      const res = await op('GET', '/api/v1/runs/{runId}', `/api/v1/runs/${runId}`, {
        key: ctx.key,
      });
      return res.body.status === 'completed' ? res : undefined;
    });
    assert.equal(run.status, 200);
    assert.equal(
      (await op('GET', '/api/v1/runs/{runId}', `/api/v1/runs/${NO_RUN}`, { key: ctx.key })).status,
      404,
    );
    assert.equal(
      (await op('GET', '/api/v1/runs/{runId}', '/api/v1/runs/not-an-id', { key: ctx.key })).status,
      404,
    );

    // D31: one output's items, a page at a time.
    const items = await op(
      'GET',
      '/api/v1/runs/{runId}/outputs/{key}',
      `/api/v1/runs/${runId}/outputs/greeting?limit=1`,
      { key: ctx.key },
    );
    assert.equal(items.status, 200);
    assert.equal(items.body.data.length, 1);
    assert.equal(
      (
        await op(
          'GET',
          '/api/v1/runs/{runId}/outputs/{key}',
          `/api/v1/runs/${runId}/outputs/greeting?limit=0`,
          { key: ctx.key },
        )
      ).status,
      400,
    );
    assert.equal(
      (
        await op(
          'GET',
          '/api/v1/runs/{runId}/outputs/{key}',
          `/api/v1/runs/${runId}/outputs/nothing`,
          { key: ctx.key },
        )
      ).status,
      404,
    );

    assert.equal(
      (await op('GET', '/api/v1/runs', '/api/v1/runs?limit=2', { key: ctx.key })).status,
      200,
    );
    assert.equal(
      (
        await op('GET', '/api/v1/runs', '/api/v1/runs?status=completed&workflowId=reads', {
          key: ctx.key,
        })
      ).status,
      200,
    );
    assert.equal(
      (await op('GET', '/api/v1/runs', '/api/v1/runs?limit=0', { key: ctx.key })).status,
      400,
    );
    assert.equal(
      (await op('GET', '/api/v1/runs', '/api/v1/runs?colour=blue', { key: ctx.key })).status,
      400,
    );

    const resumed = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream`, {
      key: ctx.key,
      headers: { 'last-event-id': '0' },
    });
    await resumed.closed;
    spec.checkStream('GET', '/api/v1/runs/{runId}/stream', resumed);
    assert.equal(resumed.frames.find((f) => f.event)?.event.type, 'response.resumed');
    assert.equal(
      (
        await op('GET', '/api/v1/runs/{runId}/stream', `/api/v1/runs/${runId}/stream`, {
          key: ctx.key,
          headers: { 'last-event-id': 'abc' },
        })
      ).status,
      400,
    );
    assert.equal(
      (
        await op('GET', '/api/v1/runs/{runId}/stream', `/api/v1/runs/${NO_RUN}/stream`, {
          key: ctx.key,
        })
      ).status,
      404,
    );
    const spent = resumed.frames.filter((f) => f.event).at(-1)!.id!;
    assert.equal(
      (
        await op('GET', '/api/v1/runs/{runId}/stream', `/api/v1/runs/${runId}/stream`, {
          key: ctx.key,
          headers: { 'last-event-id': spent },
        })
      ).status,
      204,
    );

    // D34: a stream link, followed without a key.
    const link = await op(
      'POST',
      '/api/v1/runs/{runId}/stream-link',
      `/api/v1/runs/${runId}/stream-link`,
      { key: ctx.key, body: { ttl_seconds: 60 } },
    );
    assert.equal(link.status, 200);
    assert.equal(
      (
        await op('POST', '/api/v1/runs/{runId}/stream-link', `/api/v1/runs/${runId}/stream-link`, {
          key: ctx.key,
          body: { ttl_seconds: 3601 },
        })
      ).status,
      400,
    );
    assert.equal(
      (
        await op('POST', '/api/v1/runs/{runId}/stream-link', `/api/v1/runs/${NO_RUN}/stream-link`, {
          key: ctx.key,
        })
      ).status,
      404,
    );
    const linkPath = new URL(link.body.url).pathname + new URL(link.body.url).search;
    const followed = await openSse(`${ctx.svc.url}${linkPath}`, {
      headers: { 'last-event-id': '0' },
    });
    await followed.closed;
    spec.checkStream('GET', '/streams/{runId}', followed);
    assert.equal(
      (await op('GET', '/streams/{runId}', linkPath.replace(/sig=[^&]+/, 'sig=forged'))).status,
      403,
    );
    assert.equal(
      (await op('GET', '/streams/{runId}', linkPath, { headers: { 'last-event-id': spent } }))
        .status,
      204,
    );

    const slow = await op('POST', '/api/v1/responses', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'slow', inputs: { topic: 'slow:20000 conformance' } },
    });
    assert.equal(
      (
        await op('POST', '/api/v1/runs/{runId}/cancel', `/api/v1/runs/${slow.body.run_id}/cancel`, {
          key: ctx.key,
        })
      ).status,
      202,
    );
    assert.equal(
      (
        await op('POST', '/api/v1/runs/{runId}/cancel', `/api/v1/runs/${runId}/cancel`, {
          key: ctx.key,
        })
      ).status,
      409,
    );
    assert.equal(
      (
        await op('POST', '/api/v1/runs/{runId}/cancel', `/api/v1/runs/${NO_RUN}/cancel`, {
          key: ctx.key,
        })
      ).status,
      404,
    );
    // D38: a re-run answers like a start; a re-run of nothing that exists is 404.
    for (const [path, status] of [
      [`/api/v1/runs/${runId}/rerun`, 202],
      [`/api/v1/runs/${NO_RUN}/rerun`, 404],
    ] as const)
      assert.equal(
        (
          await op('POST', '/api/v1/runs/{runId}/rerun', path, {
            key: ctx.key,
            body: { items: 'all' },
          })
        ).status,
        status,
      );
    // D39: the cancelled run deleted, then a second delete of it.
    for (const status of [200, 404])
      assert.equal(
        (
          await op('DELETE', '/api/v1/runs/{runId}', `/api/v1/runs/${slow.body.run_id}`, {
            key: ctx.key,
          })
        ).status,
        status,
      );

    assert.equal(
      (
        await op('GET', '/api/v1/workflows/{workflowId}', '/api/v1/workflows/reads', {
          key: ctx.key,
        })
      ).status,
      200,
    );
    assert.equal(
      (
        await op('GET', '/api/v1/workflows/{workflowId}', '/api/v1/workflows/reads?version=1', {
          key: ctx.key,
        })
      ).status,
      200,
    );
    assert.equal(
      (
        await op('GET', '/api/v1/workflows/{workflowId}', '/api/v1/workflows/reads?version=abc', {
          key: ctx.key,
        })
      ).status,
      400,
    );
    assert.equal(
      (
        await op('GET', '/api/v1/workflows/{workflowId}', '/api/v1/workflows/nothing', {
          key: ctx.key,
        })
      ).status,
      404,
    );
  });

  it('listing and deleting workflows (D30, D26) and the playground page with its assets, and the documented refusals', async () => {
    await op('POST', '/api/v1/workflows', '/api/v1/workflows', {
      key: ctx.key,
      body: greetingWorkflow('listed'),
    });
    await op('POST', '/api/v1/workflows', '/api/v1/workflows', {
      key: ctx.key,
      body: greetingWorkflow('deleted'),
    });
    for (const status of [200, 404])
      assert.equal(
        (
          await op('DELETE', '/api/v1/workflows/{workflowId}', '/api/v1/workflows/deleted', {
            key: ctx.key,
          })
        ).status,
        status,
      );
    const list = await op('GET', '/api/v1/workflows', '/api/v1/workflows?limit=1', {
      key: ctx.key,
    });
    assert.equal(list.status, 200);
    assert.equal(
      (
        await op(
          'GET',
          '/api/v1/workflows',
          `/api/v1/workflows?starting_after=${list.body.last_id}`,
          { key: ctx.key },
        )
      ).status,
      200,
    );
    assert.equal(
      (await op('GET', '/api/v1/workflows', '/api/v1/workflows?limit=0', { key: ctx.key })).status,
      400,
    );
    const page = await op('GET', '/', '/');
    assert.equal(page.status, 200);
    const script = /src="\/playground\/([^"]+)"/.exec(page.body)![1];
    assert.equal((await op('GET', '/playground/{asset}', `/playground/${script}`)).status, 200);
    assert.equal(
      (await op('GET', '/playground/{asset}', '/playground/app.000000000000.js')).status,
      404,
    );
  });

  it('rate limits answer 429 as documented, with the headers', async () => {
    const limited = await ctx.newAccount();
    // Before the key's first use: an API process remembers a key, and the limits on it, for up to 2 s (D6).
    await setAccountRateLimits(ctx.svc.store.collections, limited.accountId, {
      starts_per_minute: 1,
      requests_per_minute: 1,
    });
    await op('POST', '/api/v1/workflows', '/api/v1/workflows', {
      key: limited.key,
      body: greetingWorkflow('limited'),
    });
    const starts = [];
    for (let i = 0; i < 3; i++)
      starts.push(
        await op('POST', '/api/v1/responses', '/api/v1/responses', {
          key: limited.key,
          body: { workflowId: 'limited', inputs: { name: 'x' } },
        }),
      );
    assert.equal(starts.at(-1)!.status, 429);
    const reads = [];
    for (let i = 0; i < 3; i++)
      reads.push(await op('GET', '/api/v1/runs', '/api/v1/runs', { key: limited.key }));
    assert.equal(reads.at(-1)!.status, 429);
    assert.ok(reads.at(-1)!.headers.get('retry-after'));
  });

  it('files: upload, read, signed content (whole, range, refused, gone) as documented', async () => {
    const upload = (
      body: string | Buffer,
      headers: Record<string, string>,
      query = '?name=hello.txt',
    ) =>
      fetchAnswer(`${ctx.svc.url}/api/v1/files${query}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.key}`, ...headers },
        body,
      });
    const stored = spec.check(
      'POST',
      '/api/v1/files',
      await upload('hello, files', { 'content-type': 'text/plain' }),
    );
    assert.equal(stored.status, 201);
    assert.equal(
      spec.check(
        'POST',
        '/api/v1/files',
        await upload(Buffer.alloc(60_000, 1), { 'content-type': 'application/octet-stream' }),
      ).status,
      413,
    );

    const account = await op('GET', '/api/v1/account', '/api/v1/account', { key: ctx.key });
    assert.equal(account.status, 200);
    assert.ok(account.body.file_storage.used_bytes >= 'hello, files'.length);

    const fileId = stored.body.id;
    assert.equal(
      (await op('GET', '/api/v1/files/{fileId}', `/api/v1/files/${fileId}`, { key: ctx.key }))
        .status,
      200,
    );
    assert.equal(
      (await op('GET', '/api/v1/files/{fileId}', `/api/v1/files/${NO_FILE}`, { key: ctx.key }))
        .status,
      404,
    );

    const content = (url: string, headers: Record<string, string> = {}) =>
      fetchAnswer(url, { headers }).then((r) => spec.check('GET', '/files/{fileId}/content', r));
    const link: string = stored.body.url;
    assert.equal((await content(link)).status, 200);
    assert.equal((await content(link, { range: 'bytes=0-4' })).status, 206);
    assert.equal((await content(link, { range: 'bytes=999-' })).status, 416);
    assert.equal((await content(link.replace(/sig=[^&]+/, 'sig=forged'))).status, 403);
    const other = spec.check(
      'POST',
      '/api/v1/files',
      await upload('soon gone', { 'content-type': 'text/plain' }, '?name=gone.txt'),
    );
    const listed = await op('GET', '/api/v1/files', '/api/v1/files?limit=1', { key: ctx.key });
    assert.deepEqual(listed.body.data[0].id, other.body.id);
    assert.equal(
      (await op('GET', '/api/v1/files', '/api/v1/files?limit=0', { key: ctx.key })).status,
      400,
    );
    const path = `/api/v1/files/${other.body.id}`;
    assert.equal(
      (await op('DELETE', '/api/v1/files/{fileId}', path, { key: ctx.key })).status,
      200,
    );
    assert.equal(
      (await op('DELETE', '/api/v1/files/{fileId}', path, { key: ctx.key })).status,
      404,
    );
    assert.equal((await content(other.body.url)).status, 404);
  });

  it('the codec server (D32) answers as documented', async () => {
    const body = {
      payloads: [
        {
          metadata: { encoding: Buffer.from('json/plain').toString('base64') },
          data: Buffer.from('"x"').toString('base64'),
        },
      ],
    };
    const sealed = await op('POST', '/codec/encode', '/codec/encode', { key: CODEC_TOKEN, body });
    assert.equal(sealed.status, 200);
    assert.equal(
      (await op('POST', '/codec/decode', '/codec/decode', { key: CODEC_TOKEN, body: sealed.body }))
        .status,
      200,
    );
    assert.equal(
      (await op('POST', '/codec/{token}/encode', `/codec/${CODEC_TOKEN}/encode`, { body })).status,
      200,
    );
    assert.equal(
      (
        await op('POST', '/codec/{token}/decode', `/codec/${CODEC_TOKEN}/decode`, {
          body: sealed.body,
        })
      ).status,
      200,
    );
    assert.equal(
      (await op('POST', '/codec/{token}/decode', '/codec/wrong/decode', { body })).status,
      401,
    );
    assert.equal(
      (await op('POST', '/codec/decode', '/codec/decode', { key: ctx.key, body })).status,
      401,
      'an API key is not the codec token',
    );
    assert.equal(
      (
        await op('POST', '/codec/decode', '/codec/decode', {
          key: CODEC_TOKEN,
          body: { payloads: 1 },
        })
      ).status,
      400,
    );
  });

  it('the public operations answer as documented', async () => {
    assert.equal((await op('GET', '/healthz', '/healthz')).status, 200);
    assert.equal((await op('GET', '/readyz', '/readyz')).status, 200);
    assert.equal((await op('GET', '/metrics', '/metrics')).status, 200);
    assert.equal((await op('GET', '/api/v1/openapi.json', '/api/v1/openapi.json')).status, 200);
  });

  it('a method a path does not serve is 405 with the error envelope and `Allow` naming the documented methods', async () => {
    for (const [path, template] of [
      ['/api/v1/responses', '/api/v1/responses'],
      [`/api/v1/runs/${NO_RUN}/cancel`, '/api/v1/runs/{runId}/cancel'],
      ['/api/v1/workflows', '/api/v1/workflows'],
    ]) {
      const res = await call(ctx.svc.url, 'DELETE', path, { key: ctx.key });
      assert.equal(res.status, 405, path);
      spec.validate({ $ref: '#/components/schemas/Error' }, res.body, `DELETE ${path} 405`);
      const allowed = (res.headers.get('allow') ?? '')
        .split(',')
        .map((m) => m.trim().toLowerCase())
        .filter((m) => METHODS.includes(m as never));
      const documented = METHODS.filter((m) => spec.doc.paths[template][m]);
      assert.deepEqual(allowed.sort(), [...documented].sort(), `Allow of ${path}`);
    }
  });

  it('exercised every documented operation with a success, and every feasible error status (runs last)', () => {
    const missing = spec
      .operations()
      .filter((o) => ![...(spec.seen.get(o) ?? [])].some((s) => s >= 200 && s < 300));
    assert.deepEqual(missing, [], 'operations never exercised with a success');
    const statuses = new Set([...spec.seen.values()].flatMap((s) => [...s]));
    for (const s of [200, 201, 202, 206, 400, 401, 402, 403, 404, 409, 413, 415, 416, 422, 429])
      assert.ok(statuses.has(s), `status ${s} never checked`);
    assert.ok(ctx.accountId);
  });
});
