/**
 * A start reads a workflow's newest version, and a version pinned by number, by `_id` (the
 * record's `latest`, a number's entry): a filter on `workflow_id` made the embedded FerretDB decode
 * every stored version of every account (4.5 s for 200 versions of 485 KB). What a publish left
 * unset (a crash, an earlier release) is found from the versions once and set.
 */
import assert from 'node:assert/strict';
import type { WorkflowDocument } from '../../domain/graph';
import type { Contract } from '../../domain/contract';
import { findVersion, insertWorkflowVersion, latestVersionPointer } from '../../store/workflows';
import { generateId } from '../../store/ids';
import { countingCalls } from '../support/counting';
import { greetingWorkflow } from '../support/fixtures';
import { useTestStore } from '../support/store';

const contract: Contract = { inputs: [], outputs: [] };
const graph = (slug: string) => greetingWorkflow(slug) as unknown as WorkflowDocument;

describe('store: workflow versions by _id (D1)', function () {
  this.timeout(60_000);
  const ctx = useTestStore();

  it('reads the newest version and pinned numbers without a scan of the versions', async () => {
    const c = ctx.store.collections;
    await insertWorkflowVersion(c, 'acct_a', graph('v'), contract);
    const { workflow, version } = await insertWorkflowVersion(c, 'acct_a', graph('v'), contract);
    assert.equal(version.version, 2);
    const versions = countingCalls(c.workflowVersions, 'findOne');
    const counted = { ...c, workflowVersions: versions.collection };
    assert.deepEqual(await latestVersionPointer(counted, workflow._id), {
      id: version._id,
      version: 2,
    });
    assert.equal((await findVersion(counted, workflow._id, 1))?.version, 1);
    assert.equal(await findVersion(counted, workflow._id, 3), null);
    assert.equal((await findVersion(counted, workflow._id))?._id, version._id);
    // Every read of a version was by `_id`: the two versions found, and none for the number past the newest.
    assert.equal(versions.probe.calls, 2);
  });

  it('finds what a publish left unset from the versions, once, and sets it', async () => {
    const c = ctx.store.collections;
    const { workflow } = await insertWorkflowVersion(c, 'acct_b', graph('old'), contract);
    // As an earlier release publishes: a version with no entry, the record's `updated_at` moved.
    const later = new Date(Date.now() + 60_000);
    const older = {
      _id: generateId('wfv'),
      workflow_id: workflow._id,
      account_id: 'acct_b',
      version: 2,
      graph: graph('old'),
      contract,
      created_at: later,
    };
    await c.workflowVersions.insertOne(older);
    await c.workflows.updateOne({ _id: workflow._id }, { $set: { updated_at: later } });

    assert.deepEqual(await latestVersionPointer(c, workflow._id), { id: older._id, version: 2 });
    assert.equal((await findVersion(c, workflow._id, 2))?._id, older._id);
    const versions = countingCalls(c.workflowVersions, 'findOne');
    const counted = { ...c, workflowVersions: versions.collection };
    assert.deepEqual(await latestVersionPointer(counted, workflow._id), {
      id: older._id,
      version: 2,
    });
    assert.equal((await findVersion(counted, workflow._id, 2))?._id, older._id);
    assert.equal(versions.probe.calls, 1, 'set: the version read by `_id` alone');
    // The next publish numbers after it.
    const next = await insertWorkflowVersion(c, 'acct_b', graph('old'), contract);
    assert.equal(next.version.version, 3);
  });
});
