/** D30: the caller's published workflows, newest first, cursor paginated like D23, each with its latest contract. */
import type { Collections } from '../../store/db';
import { workflowPage } from '../../store/workflows';
import type { ListWorkflowsQuery } from '../contract/request-schemas';
import type { WorkflowListSchema } from '../contract/response-schemas';
import type { z } from 'zod';
import { contractView } from './workflow-contract';
import { entriesWithinPage } from '../limits/page-bytes';

/** D30: a page of workflows, as api/contract/response-schemas.ts defines it. */
export type WorkflowList = z.infer<typeof WorkflowListSchema>;

/**
 * One page of workflows (store/workflows.ts `workflowPage`: two queries whatever the page size),
 * each shown with the contract of its newest version.
 */
export async function listWorkflows(
  collections: Pick<Collections, 'workflows' | 'workflowVersions' | 'workflowVersionNumbers'>,
  accountId: string,
  query: ListWorkflowsQuery,
): Promise<WorkflowList> {
  const { docs, latest } = await workflowPage(collections, accountId, {
    limit: query.limit,
    startingAfter: query.starting_after,
  });
  // Every record of the page has a version (workflowPage leaves out those a crash left without).
  const found = docs.slice(0, query.limit).map((w) => ({
    id: w._id,
    view: contractView(w, latest.get(w._id)!),
  }));
  const page = found.slice(
    0,
    entriesWithinPage(found, (entry) => bytesOf(entry.view)),
  );
  return {
    object: 'list',
    data: page.map(({ view }) => view),
    first_id: page[0]?.id ?? null,
    last_id: page.at(-1)?.id ?? null,
    has_more: docs.length > page.length,
  };
}

const bytesOf = (view: unknown): number => JSON.stringify(view).length;
