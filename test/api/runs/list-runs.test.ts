// D23 (listing runs) and D24 (a workflow's contract).
import assert from 'node:assert/strict';
import { greetingWorkflow, publish, textRowsWorkflow, waitForRun } from '../../support/fixtures';
import { startRun } from '../../support/runs';
import { call, waitFor } from '../../support/http';
import { useService } from '../../support/use-service';

const hello = greetingWorkflow('hello');

const everyInput = {
  slug: 'every-input',
  name: 'Every input',
  nodes: [
    { id: 't', type: 'user_input', label: 'Title', input_type: 'text', description: 'A title.' },
    {
      id: 'n',
      type: 'user_input',
      label: 'Count',
      input_type: 'number',
      required: false,
      default: 3,
    },
    { id: 'b', type: 'user_input', label: 'Loud', input_type: 'boolean', required: false },
    { id: 'j', type: 'user_input', label: 'Options', input_type: 'json', required: false },
    { id: 'i', type: 'user_input', label: 'Hero Image', input_type: 'image' },
    { id: 'v', type: 'user_input', label: 'Clip', input_type: 'video', required: false },
    { id: 'f', type: 'user_input', label: 'Brief', input_type: 'file', required: false },
    { id: 'tx', type: 'text', template: '{{t}} {{n}} {{b}} {{j}} {{i}} {{v}} {{f}}' },
    { id: 'out', type: 'user_result', label: 'Summary' },
  ],
  edges: [
    ...['t', 'n', 'b', 'j', 'i', 'v', 'f'].map((id) => ({ from: id, to: 'tx', port: id })),
    { from: 'tx', to: 'out' },
  ],
};

describe('listing runs (D23) and workflow contracts (D24)', function () {
  this.timeout(60_000);
  const ctx = useService();

  before(async () => {
    for (const doc of [hello, everyInput])
      assert.equal(
        (await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key: ctx.key, body: doc })).status,
        201,
      );
  });

  it('pages through runs newest first with starting_after, and filters by status and workflow', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'hello', inputs: { name: `n${i}` } },
      });
      ids.push(res.body.run_id);
    }
    await waitFor(async () =>
      (await ctx.svc.store.collections.runs.countDocuments({
        _id: { $in: ids },
        finalized: true,
      })) === 5
        ? true
        : undefined,
    );
    const seen: string[] = [];
    let cursor: string | undefined;
    const pages: number[] = [];
    for (;;) {
      const res = await call(
        ctx.svc.url,
        'GET',
        `/api/v1/runs?limit=2${cursor ? `&starting_after=${cursor}` : ''}`,
        { key: ctx.key },
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.object, 'list');
      pages.push(res.body.data.length);
      seen.push(...res.body.data.map((r: { id: string }) => r.id));
      if (!res.body.has_more) break;
      cursor = res.body.last_id;
    }
    assert.deepEqual(pages, [2, 2, 1]);
    assert.deepEqual(seen, [...ids].reverse());
    const completed = await call(
      ctx.svc.url,
      'GET',
      '/api/v1/runs?status=completed&workflowId=hello',
      { key: ctx.key },
    );
    assert.equal(completed.body.data.length, 5);
    assert.ok(
      completed.body.data.every(
        (r: { status: string; output: unknown }) => r.status === 'completed' && r.output,
      ),
    );
    const none = await call(ctx.svc.url, 'GET', '/api/v1/runs?workflowId=every-input', {
      key: ctx.key,
    });
    assert.deepEqual(none.body.data, []);
    const other = await ctx.newAccount();
    assert.deepEqual(
      (await call(ctx.svc.url, 'GET', '/api/v1/runs', { key: other.key })).body.data,
      [],
    );
    const bad = await call(ctx.svc.url, 'GET', '/api/v1/runs?limit=1000', { key: ctx.key });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'limit');
  });

  it('shows a big run without its items (read in pages) and cuts a page at 1 MiB of items, has_more set', async () => {
    const own = await ctx.newAccount();
    // Each run keeps 300 KB of items in its record: the fourth passes the page's 1 MiB.
    await publish(ctx.svc.url, own.key, greetingWorkflow('wide', '{{name}}'.repeat(99)));
    const wide: string[] = [];
    for (let i = 0; i < 4; i++)
      wide.push(await startRun(ctx.svc.url, own.key, 'wide', { name: `${i}`.padEnd(3_000, '.') }));
    await publish(ctx.svc.url, own.key, textRowsWorkflow('big', '{{row}}', { concurrency: 2 }));
    const rows = Array.from({ length: 10 }, (_, i) => `row ${i}`);
    const big = await startRun(ctx.svc.url, own.key, 'big', { rows });
    for (const id of [...wide, big])
      assert.equal((await waitForRun(ctx.svc.url, own.key, id)).status, 'completed');

    const list = (after?: string) =>
      call(ctx.svc.url, 'GET', `/api/v1/runs?limit=10${after ? `&starting_after=${after}` : ''}`, {
        key: own.key,
      });
    const first = await list();
    assert.deepEqual(
      first.body.data.map((r: any) => r.id),
      [big, wide[3], wide[2], wide[1]],
    );
    // Before: `{"out": []}`, as if the run had no items.
    assert.equal(first.body.data[0].status, 'completed');
    assert.equal(first.body.data[0].output, null);
    assert.equal(first.body.data[1].output.greeting[0].parts[0].text.length, 300_003);
    assert.equal(first.body.has_more, true);
    assert.equal(first.body.last_id, wide[1]);
    const second = await list(first.body.last_id);
    assert.deepEqual(
      second.body.data.map((r: any) => r.id),
      [wide[0]],
    );
    assert.equal(second.body.has_more, false);
  });

  it('describes a workflow with every input type: labels, types, required flags and a JSON Schema of inputs', async () => {
    const res = await call(ctx.svc.url, 'GET', '/api/v1/workflows/every-input', { key: ctx.key });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.slug, 'every-input');
    assert.equal(res.body.version, 1);
    assert.deepEqual(
      res.body.inputs.map((i: { key: string; type: string; required: boolean }) => [
        i.key,
        i.type,
        i.required,
      ]),
      [
        ['title', 'text', true],
        ['count', 'number', false],
        ['loud', 'boolean', false],
        ['options', 'json', false],
        ['hero_image', 'image', true],
        ['clip', 'video', false],
        ['brief', 'file', false],
      ],
    );
    assert.deepEqual(
      res.body.outputs.map((o: { key: string }) => o.key),
      ['summary'],
    );
    const schema = res.body.inputs_schema;
    assert.equal(schema.type, 'object');
    assert.equal(schema.additionalProperties, false);
    assert.deepEqual(schema.required.sort(), ['hero_image', 'title']);
    assert.equal(schema.properties.title.type, 'string');
    assert.equal(schema.properties.count.type, 'number');
    assert.equal(schema.properties.count.default, 3);
    assert.equal(schema.properties.loud.type, 'boolean');
    assert.equal(schema.properties.hero_image.type, 'string');
    const byId = await call(
      ctx.svc.url,
      'GET',
      `/api/v1/workflows/${res.body.workflow_id}?version=1`,
      { key: ctx.key },
    );
    assert.equal(byId.body.version_id, res.body.version_id);
    const missing = await call(ctx.svc.url, 'GET', '/api/v1/workflows/every-input?version=9', {
      key: ctx.key,
    });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'published_workflow_version_not_found');
    const unknown = await call(ctx.svc.url, 'GET', '/api/v1/workflows/nope', { key: ctx.key });
    assert.equal(unknown.body.error.code, 'published_workflow_not_found');
  });
});
