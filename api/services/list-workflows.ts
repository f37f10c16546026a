/** D30: the caller's published workflows, newest first, cursor paginated like D23, each with its latest contract. */
import type { Filter } from 'mongodb';
import type { Collections } from '../../store/db';
import type { WorkflowDoc, WorkflowVersionDoc } from '../../store/documents';
import type { ListWorkflowsQuery } from '../contract/request-schemas';
import { contractView, type WorkflowContractView } from './workflow-contract';

export interface WorkflowList {
  object: 'list';
  data: WorkflowContractView[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/**
 * One page of workflows. Ids sort by creation time (D5), so `_id < starting_after` is the cursor.
 * Two queries whatever the page size (FerretDB scans a whole collection per query): the page of
 * workflows, then every version of those workflows without their graphs, of which the highest
 * number per workflow is kept.
 */
export async function listWorkflows(
  collections: Pick<Collections, 'workflows' | 'workflowVersions'>,
  accountId: string,
  query: ListWorkflowsQuery,
): Promise<WorkflowList> {
  const filter: Filter<WorkflowDoc> = { account_id: accountId };
  if (query.starting_after) filter._id = { $lt: query.starting_after };
  const docs = await collections.workflows
    .find(filter)
    .sort({ _id: -1 })
    .limit(query.limit + 1)
    .toArray();
  const page = docs.slice(0, query.limit);
  const latest = new Map<string, WorkflowVersionDoc>();
  if (page.length > 0) {
    const versions = await collections.workflowVersions
      .find({ workflow_id: { $in: page.map((w) => w._id) } }, { projection: { graph: 0 } })
      .toArray();
    for (const v of versions)
      if ((latest.get(v.workflow_id)?.version ?? 0) < v.version) latest.set(v.workflow_id, v);
  }
  // A workflow whose first version failed to insert has nothing to run: it is left out (the cursor still moves past it).
  const data = page.flatMap((w) => {
    const version = latest.get(w._id);
    return version ? [contractView(w, version)] : [];
  });
  return {
    object: 'list',
    data,
    first_id: page[0]?._id ?? null,
    last_id: page.at(-1)?._id ?? null,
    has_more: docs.length > query.limit,
  };
}
