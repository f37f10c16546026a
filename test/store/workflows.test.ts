/**
 * Published workflows (store/workflows.ts) after an API process died in the middle of a publish
 * or a delete (test/support/api-crash.ts). A first publish killed after its workflow record and
 * before its version counted the version's bytes in the account's workflow quota for good, and
 * the list named the record it did not show in `first_id`/`last_id`.
 */
import assert from 'node:assert/strict';
import { publishedBytes, recountStoredBytes } from '../../store/workflows';
import { killApiAfter } from '../support/api-crash';
import { hasStringElement } from '../support/mongo-proxy';
import { greetingWorkflow, publish } from '../support/fixtures';
import { call } from '../support/http';
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
});
