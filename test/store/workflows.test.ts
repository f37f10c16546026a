/**
 * Published workflows (store/workflows.ts) after an API process died in the middle of a publish
 * or a delete (test/support/api-crash.ts). A first publish killed after its workflow record and
 * before its version counted the version's bytes in the account's workflow quota for good, and
 * the list named the record it did not show in `first_id`/`last_id`. A delete killed after the
 * versions went left the record hidden yet counted, and the next publish of its slug made version
 * 2 of it instead of a new workflow.
 */
import assert from 'node:assert/strict';
import { publishedBytes, recountStoredBytes } from '../../store/workflows';
import { POINTER_TTL_MS } from '../../api/workflows/workflow-catalog';
import { killApiAfter } from '../support/api-crash';
import { hasStringElement } from '../support/mongo-proxy';
import { greetingWorkflow, publish } from '../support/fixtures';
import { expectError } from '../support/api-assert';
import { call, waitFor } from '../support/http';
import { useService } from '../support/use-service';

describe('workflows after a crash mid-publish or mid-delete (store/workflows.ts)', function () {
  this.timeout(120_000);
  const ctx = useService({ worker: false });
  const c = () => ctx.svc.store.collections;
  const list = async (key: string, query = '') =>
    (await call(ctx.svc.url, 'GET', `/api/v1/workflows${query}`, { key })).body;

  it('a first publish killed after its record, before its version: nothing counted or listed, the next publish makes version 1', async () => {
    const { accountId, key } = await ctx.newAccount(1);
    const shown = await publish(ctx.svc.url, key, greetingWorkflow('shown'));
    const stored = await publishedBytes(c(), accountId);
    assert.ok(stored > 0);

    await killApiAfter(
      ctx.svc.config,
      {},
      (m) => hasStringElement(m, 'findAndModify', 'workflows') && m.includes(accountId),
      (url) => call(url, 'POST', '/api/v1/workflows', { key, body: greetingWorkflow('cut') }),
    );
    assert.equal(await c().workflows.countDocuments({ account_id: accountId, slug: 'cut' }), 1);
    assert.equal(await publishedBytes(c(), accountId), stored, 'no bytes counted for no version');

    // The list shows, and names, only workflows it can show: a page of one reads on past the record.
    const page = await list(key);
    assert.deepEqual(
      page.data.map((w: { slug: string }) => w.slug),
      ['shown'],
    );
    assert.equal(page.first_id, shown.workflow_id);
    assert.equal(page.last_id, shown.workflow_id);
    const one = await list(key, '?limit=1');
    assert.deepEqual(
      [one.data.map((w: { slug: string }) => w.slug), one.first_id, one.has_more],
      [['shown'], shown.workflow_id, false],
    );

    const again = await publish(ctx.svc.url, key, greetingWorkflow('cut'));
    assert.equal(again.version, 1);
    assert.deepEqual(
      await recountStoredBytes(c(), accountId),
      [],
      'every workflow counts exactly what its versions hold',
    );
  });

  /** Deletes `slug` through an API child killed once the first of its versions' deletes reached the store. */
  const deleteKilledAfterVersions = (key: string, slug: string) =>
    killApiAfter(
      ctx.svc.config,
      {},
      (m) => hasStringElement(m, 'delete', 'workflow_versions'),
      (url) => call(url, 'DELETE', `/api/v1/workflows/${slug}`, { key }),
    );

  /** The versions' delete reached the store before the kill; it may still be applying. */
  const versionsGone = (workflowId: string) =>
    waitFor(
      async () =>
        (await c().workflowVersions.countDocuments({ workflow_id: workflowId })) === 0
          ? true
          : undefined,
      { what: 'the versions deleted' },
    );

  it('a workflow DELETE killed after its versions went: gone to every read, and the next publish of the slug is a new workflow at version 1', async () => {
    const { accountId, key } = await ctx.newAccount(1);
    const first = await publish(ctx.svc.url, key, greetingWorkflow('delw'));
    await deleteKilledAfterVersions(key, 'delw');
    await versionsGone(first.workflow_id);

    assert.deepEqual((await list(key)).data, []);
    // This API process published it: it may serve the record it holds for POINTER_TTL_MS (2 s).
    for (const ref of ['delw', first.workflow_id]) {
      const contract = () => call(ctx.svc.url, 'GET', `/api/v1/workflows/${ref}`, { key });
      const gone = await waitFor(
        async () => {
          const res = await contract();
          return res.body.error?.code === 'published_workflow_not_found' ? res : undefined;
        },
        { timeoutMs: 3 * POINTER_TTL_MS, what: `${ref} not found` },
      );
      expectError(gone, {
        status: 404,
        type: 'not_found_error',
        code: 'published_workflow_not_found',
      });
    }

    const again = await publish(ctx.svc.url, key, greetingWorkflow('delw', 'Hi'));
    assert.equal(again.version, 1);
    assert.notEqual(again.workflow_id, first.workflow_id);
    assert.equal(await c().workflows.countDocuments({ _id: first.workflow_id }), 0);
    assert.deepEqual(await recountStoredBytes(c(), accountId), [], 'only the new version counted');
    const contract = await call(ctx.svc.url, 'GET', '/api/v1/workflows/delw', { key });
    assert.deepEqual([contract.body.workflow_id, contract.body.version], [again.workflow_id, 1]);
  });

  it('a workflow DELETE killed after its versions went: a repeated DELETE finishes it, and its bytes leave the quota', async () => {
    const { accountId, key } = await ctx.newAccount(1);
    const first = await publish(ctx.svc.url, key, greetingWorkflow('delr'));
    await deleteKilledAfterVersions(key, 'delr');
    await versionsGone(first.workflow_id);
    const again = await call(ctx.svc.url, 'DELETE', '/api/v1/workflows/delr', { key });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(again.body, { id: first.workflow_id, object: 'workflow', deleted: true });
    assert.equal(await c().workflows.countDocuments({ account_id: accountId }), 0);
    assert.equal(await publishedBytes(c(), accountId), 0);
    expectError(await call(ctx.svc.url, 'DELETE', '/api/v1/workflows/delr', { key }), {
      status: 404,
      type: 'not_found_error',
      code: 'published_workflow_not_found',
    });
  });
});
