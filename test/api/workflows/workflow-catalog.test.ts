/**
 * The per-process catalog of published workflows (D1, D2) on the real store: what it remembers,
 * that concurrent reads of one workflow share one store read, and that a publish in this process
 * racing a read of the same slug neither fails that read nor is lost.
 */
import assert from 'node:assert/strict';
import type { WorkflowDoc, WorkflowVersionDoc } from '../../../store/documents';
import { generateId } from '../../../store/ids';
import { WorkflowCatalog } from '../../../api/workflows/workflow-catalog';
import { countingCalls } from '../../support/counting';
import { greetingWorkflow, publish } from '../../support/fixtures';
import { useService } from '../../support/use-service';

describe('workflow catalog (D1, D2)', function () {
  this.timeout(60_000);
  const ctx = useService({ worker: false });

  function catalogCountingReads() {
    const { workflows, workflowVersions, workflowVersionNumbers } = ctx.svc.store.collections;
    const counted = countingCalls(workflows, 'findOne');
    return {
      catalog: new WorkflowCatalog({
        workflows: counted.collection,
        workflowVersions,
        workflowVersionNumbers,
      }),
      probe: counted.probe,
    };
  }

  it('serves a burst of reads of one workflow with one store read; "not found" is never remembered', async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('burst'));
    const { catalog, probe } = catalogCountingReads();
    const found = await Promise.all(
      Array.from({ length: 5 }, () => catalog.findWorkflow(ctx.accountId, 'burst')),
    );
    assert.ok(found.every((doc) => doc?.slug === 'burst'));
    assert.equal(probe.calls, 1);
    await catalog.findWorkflow(ctx.accountId, 'burst');
    assert.equal(probe.calls, 1, 'a found record is remembered');

    const missing = await Promise.all([
      catalog.findWorkflow(ctx.accountId, 'absent'),
      catalog.findWorkflow(ctx.accountId, 'absent'),
    ]);
    assert.deepEqual(missing, [null, null]);
    assert.equal(probe.calls, 2, 'concurrent misses share one read');
    assert.equal(await catalog.findWorkflow(ctx.accountId, 'absent'), null);
    assert.equal(probe.calls, 3, 'a miss is read again: a first publish is visible at once');
  });

  it('a publish here while a read of its slug is in flight: the read answers what it found, and the next read sees the publish without a round trip', async () => {
    const published = await publish(ctx.svc.url, ctx.key, greetingWorkflow('template'));
    const { workflows, workflowVersions } = ctx.svc.store.collections;
    const template = (await workflows.findOne({ _id: published.workflow_id })) as WorkflowDoc;
    const version = (await workflowVersions.findOne({
      workflow_id: template._id,
    })) as WorkflowVersionDoc;
    // A first publish of `racing` as this process's publish reports it; the store never holds it,
    // so the read below, begun before the publish, finds nothing.
    const racing: WorkflowDoc = { ...template, _id: generateId('wf'), slug: 'racing' };
    const { catalog, probe } = catalogCountingReads();

    const reading = catalog.findWorkflow(ctx.accountId, 'racing');
    assert.equal(probe.calls, 1, 'the read is in flight');
    catalog.published(racing, { ...version, workflow_id: racing._id });
    assert.equal(await reading, null);

    assert.deepEqual(await catalog.findWorkflow(ctx.accountId, 'racing'), racing);
    assert.deepEqual(await catalog.findWorkflow(ctx.accountId, racing._id), racing);
    assert.equal(probe.calls, 1);
  });
});
