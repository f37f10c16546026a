// D30: GET /api/v1/workflows lists the caller's published workflows, newest first, paginated
// like D23, each as its latest version's contract (the D24 shape), in two queries per page.
import assert from 'node:assert/strict';
import { listWorkflows } from '../../api/services/list-workflows';
import { startService, type TestService } from '../support/service';
import { newAccount } from '../support/accounts';
import { greetingWorkflow, publish, typedInputsWorkflow } from '../support/fixtures';
import { call } from '../support/http';
import { countingCalls } from '../support/counting';

describe('listing published workflows (D30)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let key: string;
  let accountId: string;

  before(async () => {
    svc = await startService({ worker: false });
    ({ key, accountId } = await newAccount(svc.store.collections));
    await publish(svc.url, key, greetingWorkflow('first'));
    await publish(svc.url, key, typedInputsWorkflow('second'));
    await publish(svc.url, key, greetingWorkflow('third'));
    await publish(svc.url, key, greetingWorkflow('first', 'Hi')); // version 2 of the oldest: its place stays
  });
  after(async () => svc?.close());

  it('pages newest first with starting_after, each entry the latest version’s contract as D24 gives it', async () => {
    const slugs: string[] = [];
    const pages: number[] = [];
    let cursor: string | undefined;
    for (;;) {
      const res = await call(svc.url, 'GET', `/api/v1/workflows?limit=2${cursor ? `&starting_after=${cursor}` : ''}`, { key });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.object, 'list');
      assert.equal(res.body.first_id, res.body.data[0].workflow_id);
      pages.push(res.body.data.length);
      slugs.push(...res.body.data.map((w: { slug: string }) => w.slug));
      for (const entry of res.body.data) {
        const contract = await call(svc.url, 'GET', `/api/v1/workflows/${entry.slug}`, { key });
        assert.deepEqual(entry, contract.body);
      }
      if (!res.body.has_more) break;
      cursor = res.body.last_id;
    }
    assert.deepEqual(pages, [2, 1]);
    assert.deepEqual(slugs, ['third', 'second', 'first']);
    const all = await call(svc.url, 'GET', '/api/v1/workflows', { key });
    const first = all.body.data.find((w: { slug: string }) => w.slug === 'first');
    assert.equal(first.version, 2);
    assert.deepEqual(first.inputs.map((i: { key: string }) => i.key), ['name']);
    assert.deepEqual(all.body.data.find((w: { slug: string }) => w.slug === 'second').inputs_schema.required.sort(), ['count', 'gift_wrap', 'product_name']);
  });

  it('shows nothing of other accounts and refuses a malformed query', async () => {
    const other = await newAccount(svc.store.collections);
    const empty = await call(svc.url, 'GET', '/api/v1/workflows', { key: other.key });
    assert.deepEqual(empty.body, { object: 'list', data: [], first_id: null, last_id: null, has_more: false });
    for (const [query, param] of [['limit=0', 'limit'], ['limit=101', 'limit'], ['starting_after=run_01J00000000000000000000000', 'starting_after'], ['colour=blue', undefined]]) {
      const bad = await call(svc.url, 'GET', `/api/v1/workflows?${query}`, { key });
      assert.equal(bad.status, 400, query);
      assert.equal(bad.body.error.type, 'invalid_request_error');
      if (param) assert.equal(bad.body.error.param, param, query);
    }
    assert.equal((await call(svc.url, 'GET', '/api/v1/workflows')).status, 401);
  });

  it('reads a page in two queries whatever its size: the workflows, then their versions', async () => {
    const workflows = countingCalls(svc.store.collections.workflows, 'find');
    const versions = countingCalls(svc.store.collections.workflowVersions, 'find');
    const page = await listWorkflows({ workflows: workflows.collection, workflowVersions: versions.collection }, accountId, { limit: 20 });
    assert.equal(page.data.length, 3);
    assert.deepEqual([workflows.probe.calls, versions.probe.calls], [1, 1]);
  });
});
