// D37: metadata on a run (start, GET, list, webhook) and the run search of GET /api/v1/runs.
import assert from 'node:assert/strict';
import { greetingWorkflow, llmWorkflow, publish, waitForRun } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { startRun } from '../../support/runs';
import { useService } from '../../support/use-service';
import { startWebhookReceiver, type WebhookReceiver } from '../../fakes/webhook-receiver';

const list = (url: string, key: string, query: Record<string, string>) =>
  call(url, 'GET', `/api/v1/runs?${new URLSearchParams(query)}`, { key });

describe('metadata and run search (D37)', function () {
  this.timeout(90_000);
  const ctx = useService({
    env: { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORK: 'true' },
  });
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await startWebhookReceiver();
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('meta-a'));
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('meta-b'));
  });
  after(async () => receiver?.close());

  it('returns the metadata on GET (live and finished), in the list and in the webhook body', async () => {
    const metadata = { order_id: 'ord_123', 'customer.id': 'cus-9', 'a-b_c.d': '' };
    const runId = await startRun(
      ctx.svc.url,
      ctx.key,
      'meta-a',
      { name: 'Ada' },
      {
        body: { metadata, webhook: `${receiver.url}/meta` },
      },
    );
    const live = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.deepEqual(live.body.metadata, metadata);
    const done = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.metadata, metadata);
    assert.deepEqual(Object.keys(done.metadata), Object.keys(metadata), 'in the caller’s order');
    const hit = await waitFor(
      async () => receiver.hitsOn('/meta').find((h) => JSON.parse(h.body).id === runId),
      { what: 'the webhook' },
    );
    assert.deepEqual(JSON.parse(hit.body).metadata, metadata);
    const listed = await list(ctx.svc.url, ctx.key, { limit: '5' });
    assert.deepEqual(listed.body.data.find((r: any) => r.id === runId).metadata, metadata);
    // Kept out of Temporal's history: the workflow's arguments never carry it.
    const doc = await ctx.svc.store.collections.runs.findOne({ _id: runId });
    assert.deepEqual(doc?.metadata_tags, ['order_id=ord_123', 'customer.id=cus-9', 'a-b_c.d=']);
  });

  it('shows `{}` for a run started without metadata', async () => {
    const runId = await startRun(ctx.svc.url, ctx.key, 'meta-a', { name: 'Bo' });
    assert.deepEqual((await waitForRun(ctx.svc.url, ctx.key, runId)).metadata, {});
  });

  it('refuses metadata that breaks a rule with 400 invalid_metadata naming the field', async () => {
    const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    const cases: [unknown, string][] = [
      ['not an object', 'metadata'],
      [['a'], 'metadata'],
      [seventeen, 'metadata'],
      [{ 'bad key': 'v' }, 'metadata["bad key"]'],
      [{ '': 'v' }, 'metadata[""]'],
      [{ ['k'.repeat(65)]: 'v' }, `metadata.${'k'.repeat(65)}`],
      [{ 'a=b': 'v' }, 'metadata["a=b"]'],
      [{ n: 1 }, 'metadata.n'],
      [{ n: null }, 'metadata.n'],
      [{ n: { x: 'y' } }, 'metadata.n'],
      [{ long: 'x'.repeat(513) }, 'metadata.long'],
      [JSON.parse('{"__proto__": "x"}'), 'metadata.__proto__'],
    ];
    for (const [metadata, param] of cases) {
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'meta-a', inputs: { name: 'Ada' }, metadata },
      });
      assert.equal(res.status, 400, JSON.stringify(metadata));
      assert.equal(res.body.error.type, 'invalid_request_error');
      assert.equal(res.body.error.code, 'invalid_metadata', JSON.stringify(res.body));
      assert.equal(res.body.error.param, param, JSON.stringify(res.body));
    }
    // The limits themselves are fine.
    const sixteen = Object.fromEntries(
      Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v'.repeat(512)]),
    );
    await startRun(
      ctx.svc.url,
      ctx.key,
      'meta-a',
      { name: 'Ada' },
      { body: { metadata: sixteen } },
    );
    await startRun(
      ctx.svc.url,
      ctx.key,
      'meta-a',
      { name: 'Ada' },
      {
        body: { metadata: { ['k'.repeat(64)]: 'v' } },
      },
    );
  });

  it('makes metadata part of the body an Idempotency-Key is bound to (D18)', async () => {
    const headers = { 'idempotency-key': `meta-${Date.now()}` };
    const body = { workflowId: 'meta-a', inputs: { name: 'Ada' }, metadata: { a: '1' } };
    const first = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      headers,
      body,
    });
    assert.equal(first.status, 202);
    const again = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      headers,
      body,
    });
    assert.equal(again.body.run_id, first.body.run_id);
    const other = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      headers,
      body: { ...body, metadata: { a: '2' } },
    });
    assert.equal(other.status, 409);
    assert.equal(other.body.error.code, 'idempotency_key_reused');
  });

  describe('GET /api/v1/runs filters', () => {
    let key: string;
    const runs: Record<string, string> = {};
    let middle: Date;

    before(async () => {
      ({ key } = await ctx.newAccount());
      await publish(ctx.svc.url, key, greetingWorkflow('meta-a'));
      await publish(ctx.svc.url, key, greetingWorkflow('meta-b'));
      const start = (name: string, slug: string, metadata: Record<string, string>) =>
        startRun(ctx.svc.url, key, slug, slug === 'meta-llm' ? { topic: name } : { name }, {
          body: { metadata },
        }).then((id) => {
          runs[name] = id;
        });
      await start('r1', 'meta-a', { customer: 'c1', tier: 'gold' });
      await start('r2', 'meta-b', { customer: 'c1', tier: 'silver' });
      await new Promise((r) => setTimeout(r, 20)); // two creation times apart, for the time filters
      middle = new Date();
      await new Promise((r) => setTimeout(r, 20));
      await start('r3', 'meta-a', { customer: 'c2', tier: 'gold' });
      await start('r4', 'meta-a', { customer: 'c1', tier: 'gold', 'x.y': 'z=1' });
      for (const id of Object.values(runs)) await waitForRun(ctx.svc.url, key, id);
      // A failed one (no model provider is configured), for the status filter.
      await publish(ctx.svc.url, key, llmWorkflow('meta-llm'));
      await start('r5', 'meta-llm', { customer: 'c1' });
      assert.equal((await waitForRun(ctx.svc.url, key, runs.r5)).status, 'failed');
    });

    const ids = async (query: Record<string, string>) => {
      const res = await list(ctx.svc.url, key, query);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const names = Object.fromEntries(Object.entries(runs).map(([n, id]) => [id, n]));
      return res.body.data.map((r: any) => names[r.id]);
    };

    it('by one metadata pair, by several (AND), with a dot and `=` in them', async () => {
      assert.deepEqual(await ids({ 'metadata[customer]': 'c1' }), ['r5', 'r4', 'r2', 'r1']);
      assert.deepEqual(await ids({ 'metadata[customer]': 'c1', 'metadata[tier]': 'gold' }), [
        'r4',
        'r1',
      ]);
      assert.deepEqual(await ids({ 'metadata[x.y]': 'z=1' }), ['r4']);
      assert.deepEqual(await ids({ 'metadata[customer]': 'c3' }), []);
      assert.deepEqual(await ids({ 'metadata[customer]': 'c' }), [], 'whole values only');
    });

    it('by workflow (slug, id or the older workflowId), status, and creation time, all AND-ed', async () => {
      assert.deepEqual(await ids({ workflow_id: 'meta-b' }), ['r2']);
      assert.deepEqual(await ids({ workflowId: 'meta-b' }), ['r2']);
      const b = (await list(ctx.svc.url, key, { workflow_id: 'meta-b', limit: '1' })).body.data[0];
      assert.deepEqual(await ids({ workflow_id: b.published_workflow_id }), ['r2']);
      assert.deepEqual(await ids({ workflow_id: 'no-such-flow' }), []);
      // Both spellings are two filters, AND-ed.
      assert.deepEqual(await ids({ workflow_id: 'meta-b', workflowId: b.published_workflow_id }), [
        'r2',
      ]);
      assert.deepEqual(await ids({ workflow_id: 'meta-a', workflowId: 'meta-b' }), []);
      assert.deepEqual(await ids({ status: 'failed' }), ['r5']);
      assert.deepEqual(await ids({ status: 'cancelled' }), []);
      assert.deepEqual(await ids({ status: 'completed', 'metadata[customer]': 'c1' }), [
        'r4',
        'r2',
        'r1',
      ]);
      assert.deepEqual(await ids({ created_after: middle.toISOString() }), ['r5', 'r4', 'r3']);
      assert.deepEqual(await ids({ created_before: middle.toISOString() }), ['r2', 'r1']);
      assert.deepEqual(
        await ids({
          created_after: middle.toISOString(),
          workflow_id: 'meta-a',
          'metadata[tier]': 'gold',
          status: 'completed',
        }),
        ['r4', 'r3'],
      );
      // An offset and a bare date are ISO 8601 too.
      const offset = new Date(middle.getTime() + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      assert.deepEqual(await ids({ created_before: offset }), ['r2', 'r1']);
      assert.deepEqual(await ids({ created_before: '2000-01-01' }), []);
    });

    it('pages a filtered list with the same cursor', async () => {
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const res = await list(ctx.svc.url, key, {
          'metadata[customer]': 'c1',
          limit: '1',
          ...(after ? { starting_after: after } : {}),
        });
        assert.equal(res.status, 200);
        seen.push(...res.body.data.map((r: any) => r.id));
        if (!res.body.has_more) break;
        after = res.body.last_id;
      }
      assert.deepEqual(seen, [runs.r5, runs.r4, runs.r2, runs.r1]);
    });

    it('refuses bad filters with 400 naming the parameter', async () => {
      for (const [query, code, param] of [
        [{ created_after: 'yesterday' }, undefined, 'created_after'],
        [{ created_before: '2026-13-01T00:00:00Z' }, undefined, 'created_before'],
        [{ 'metadata[bad key]': 'x' }, 'invalid_metadata', 'metadata["bad key"]'],
        [{ 'metadata[k]': 'x'.repeat(513) }, 'invalid_metadata', 'metadata.k'],
        [{ status: 'done' }, undefined, 'status'],
        [{ color: 'red' }, undefined, 'color'],
      ] as const) {
        const res = await list(ctx.svc.url, key, query as Record<string, string>);
        assert.equal(res.status, 400, JSON.stringify(query));
        assert.equal(res.body.error.type, 'invalid_request_error');
        assert.equal(res.body.error.code, code, JSON.stringify(res.body));
        assert.equal(res.body.error.param, param, JSON.stringify(res.body));
      }
      const repeated = await call(ctx.svc.url, 'GET', '/api/v1/runs?metadata[k]=a&metadata[k]=b', {
        key,
      });
      assert.equal(repeated.status, 400);
      assert.equal(repeated.body.error.code, 'invalid_metadata');
      // A query key named like an Object.prototype member names no code of its own.
      const proto = await call(ctx.svc.url, 'GET', '/api/v1/runs?__proto__=x', { key });
      assert.equal(proto.status, 400);
      assert.equal(proto.body.error.code, undefined, JSON.stringify(proto.body));
      assert.equal(proto.body.error.param, '__proto__');
    });

    it('never shows another account’s runs', async () => {
      assert.deepEqual(
        (await list(ctx.svc.url, ctx.key, { 'metadata[customer]': 'c2' })).body.data,
        [],
      );
    });
  });

  it('creates the indexes of the run search at start-up', async () => {
    const names = (await ctx.svc.store.collections.runs.listIndexes().toArray()).map((i) => i.name);
    for (const name of [
      'account_newest',
      'account_status',
      'account_finalized',
      'account_workflow',
      'account_metadata',
    ])
      assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
  });
});
