/**
 * D26: deleting one of the caller's workflows. Every version goes with it and its slug is free to
 * publish again (a new workflow, version 1); what its versions held leaves the account's workflow
 * quota. Runs already started carry their graph and finish; finished runs keep their results (a
 * re-run of one is then `published_workflow_not_found`). Other API processes stop starting it
 * within the catalog's 2 s (api/workflows/workflow-catalog.ts), this one at once.
 */
import type { Collections } from '../../store/db';
import { deleteWorkflowVersions, findWorkflowRecord } from '../../store/workflows';
import type { DeletedWorkflow } from '../contract/response-schemas';
import type { StorageQuota } from '../../store/storage-quota';
import type { WorkflowCatalog } from './workflow-catalog';
import { workflowNotFound } from './resolve-version';

export interface DeleteWorkflowDeps {
  collections: Pick<Collections, 'workflows' | 'workflowVersions' | 'workflowVersionNumbers'>;
  catalog: WorkflowCatalog;
  workflowQuota: StorageQuota;
}

/** Deletes the caller's own workflow (`wf_` id or slug); another account's, public or not, is 404. */
export async function deleteWorkflow(
  deps: DeleteWorkflowDeps,
  accountId: string,
  ref: string,
): Promise<DeletedWorkflow> {
  // One a delete cut short (marked, hidden from every other read) is found, and finished.
  const workflow = await findWorkflowRecord(deps.collections, accountId, ref, { deleting: true });
  if (!workflow || workflow.account_id !== accountId) throw workflowNotFound(ref);
  // Deletes at once: one removes it and takes its bytes off the quota; the others find it gone
  // (404), or its bytes would be taken off once for each of them.
  const removed = await deleteWorkflowVersions(deps.collections, workflow._id);
  deps.catalog.deleted(workflow);
  if (!removed) throw workflowNotFound(ref);
  deps.workflowQuota.changed(accountId, -(workflow.stored_bytes ?? 0));
  return { id: workflow._id, object: 'workflow', deleted: true };
}
