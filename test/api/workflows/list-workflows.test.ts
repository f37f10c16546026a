// D30: GET /api/v1/workflows lists the caller's published workflows, newest first, paginated
// like D23, each as its latest version's contract (the D24 shape), in two queries per page.
import assert from 'node:assert/strict';
import { listWorkflows } from '../../../api/workflows/list-workflows';
import { greetingWorkflow, publish, typedInputsWorkflow } from '../../support/fixtures';
import { call } from '../../support/http';
import { countingCalls } from '../../support/counting';
import { useService } from '../../support/use-service';

describe('listing published workflows (D30)', function () {
  this.timeout(60_000);
  const ctx = useService({ worker: false });

  before(async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('first'));
    await publish(ctx.svc.url, ctx.key, typedInputsWorkflow('second'));
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('third'));
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('first', 'Hi')); // version 2 of the oldest: its place stays
  });

  it('pages newest first with starting_after, each entry the latest version’s contract as D24 gives it', async () => {
    const slugs: string[] = [];
    const pages: number[] = [];
    let cursor: string | undefined;
    for (;;) {
      const res = await call(
        ctx.svc.url,
        'GET',
        `/api/v1/workflows?limit=2${cursor ? `&starting_after=${cursor}` : ''}`,
        { key: ctx.key },
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.object, 'list');
      assert.equal(res.body.first_id, res.body.data[0].workflow_id);
      pages.push(res.body.data.length);
      slugs.push(...res.body.data.map((w: { slug: string }) => w.slug));
      for (const entry of res.body.data) {
        const contract = await call(ctx.svc.url, 'GET', `/api/v1/workflows/${entry.slug}`, {
          key: ctx.key,
        });
        assert.deepEqual(entry, contract.body);
      }
      if (!res.body.has_more) break;
      cursor = res.body.last_id;
    }
    assert.deepEqual(pages, [2, 1]);
    assert.deepEqual(slugs, ['third', 'second', 'first']);
    const all = await call(ctx.svc.url, 'GET', '/api/v1/workflows', { key: ctx.key });
    const first = all.body.data.find((w: { slug: string }) => w.slug === 'first');
    assert.equal(first.version, 2);
    assert.deepEqual(
      first.inputs.map((i: { key: string }) => i.key),
      ['name'],
    );
    assert.deepEqual(
      all.body.data
        .find((w: { slug: string }) => w.slug === 'second')
        .inputs_schema.required.sort(),
      ['count', 'gift_wrap', 'product_name'],
    );
  });

  it('cuts a page at 1 MiB of contracts, has_more set, and the next page goes on after it', async () => {
    const own = await ctx.newAccount();
    // 100 inputs described in 2,000 characters each: a contract of ~400 KB (inputs and their schema).
    const wide = (slug: string) => {
      const ids = Array.from({ length: 100 }, (_, i) => `i${i}`);
      return {
        slug,
        nodes: [
          ...ids.map((id) => ({
            id,
            type: 'user_input',
            label: id,
            input_type: 'text',
            description: `${id} `.padEnd(2_000, '.'),
          })),
          { id: 'all', type: 'text', template: ids.map((id) => `{{${id}}}`).join(' ') },
          { id: 'out', type: 'user_result', label: 'Out' },
        ],
        edges: [
          ...ids.map((id) => ({ from: id, to: 'all', port: id })),
          { from: 'all', to: 'out' },
        ],
      };
    };
    for (const slug of ['w1', 'w2', 'w3']) await publish(ctx.svc.url, own.key, wide(slug));
    const list = (after?: string) =>
      call(
        ctx.svc.url,
        'GET',
        `/api/v1/workflows?limit=10${after ? `&starting_after=${after}` : ''}`,
        {
          key: own.key,
        },
      );
    const first = await list();
    assert.deepEqual(
      first.body.data.map((w: { slug: string }) => w.slug),
      ['w3', 'w2'],
    );
    assert.equal(first.body.has_more, true);
    assert.equal(first.body.last_id, first.body.data[1].workflow_id);
    const second = await list(first.body.last_id);
    assert.deepEqual(
      second.body.data.map((w: { slug: string }) => w.slug),
      ['w1'],
    );
    assert.equal(second.body.has_more, false);
  });

  it('shows nothing of other accounts and refuses a malformed query', async () => {
    const other = await ctx.newAccount();
    const empty = await call(ctx.svc.url, 'GET', '/api/v1/workflows', { key: other.key });
    assert.deepEqual(empty.body, {
      object: 'list',
      data: [],
      first_id: null,
      last_id: null,
      has_more: false,
    });
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['starting_after=run_01J00000000000000000000000', 'starting_after'],
      ['colour=blue', undefined],
    ]) {
      const bad = await call(ctx.svc.url, 'GET', `/api/v1/workflows?${query}`, { key: ctx.key });
      assert.equal(bad.status, 400, query);
      assert.equal(bad.body.error.type, 'invalid_request_error');
      if (param) assert.equal(bad.body.error.param, param, query);
    }
    assert.equal((await call(ctx.svc.url, 'GET', '/api/v1/workflows')).status, 401);
  });

  it('reads a page in two queries whatever its size: the workflows, then their versions', async () => {
    const workflows = countingCalls(ctx.svc.store.collections.workflows, 'find');
    const versions = countingCalls(ctx.svc.store.collections.workflowVersions, 'find');
    const page = await listWorkflows(
      {
        workflows: workflows.collection,
        workflowVersions: versions.collection,
        workflowVersionNumbers: ctx.svc.store.collections.workflowVersionNumbers,
      },
      ctx.accountId,
      { limit: 20 },
    );
    assert.equal(page.data.length, 3);
    assert.deepEqual([workflows.probe.calls, versions.probe.calls], [1, 1]);
  });
});
