/** D30: the caller's published workflows, newest first, cursor paginated like D23, each with its latest contract. */
import type { Collections } from '../../store/db';
import { workflowPage } from '../../store/workflows';
import type { ListWorkflowsQuery } from '../contract/request-schemas';
import type { WorkflowListSchema } from '../contract/response-schemas';
import type { z } from 'zod';
import { contractView } from './workflow-contract';

/** D30: a page of workflows, as api/contract/response-schemas.ts defines it. */
export type WorkflowList = z.infer<typeof WorkflowListSchema>;

/**
 * One page of workflows (store/workflows.ts `workflowPage`: two queries whatever the page size),
 * each shown with the contract of its newest version.
 */
export async function listWorkflows(
  collections: Pick<Collections, 'workflows' | 'workflowVersions'>,
  accountId: string,
  query: ListWorkflowsQuery,
): Promise<WorkflowList> {
  const { docs, latest } = await workflowPage(collections, accountId, {
    limit: query.limit,
    startingAfter: query.starting_after,
  });
  const data: WorkflowList['data'] = [];
  let shown = 0;
  let bytes = 0;
  for (const w of docs.slice(0, query.limit)) {
    // A workflow whose first version failed to insert has nothing to run: it is left out (the cursor still moves past it).
    const version = latest.get(w._id);
    const view = version && contractView(w, version);
    if (view) {
      bytes += JSON.stringify(view).length;
      if (bytes > PAGE_BYTES && data.length > 0) break;
      data.push(view);
    }
    shown++;
  }
  const page = docs.slice(0, shown);
  return {
    object: 'list',
    data,
    first_id: page[0]?._id ?? null,
    last_id: page.at(-1)?._id ?? null,
    has_more: docs.length > shown,
  };
}

/**
 * The most bytes of contracts one page holds (at least one workflow is shown). A contract of
 * 500 inputs with long descriptions is ~2 MB, so a page of 100 was 80 MB built on the API's one
 * thread (4.9 s; ten at once stalled every account's answers for most of a minute); a page cut
 * short says `has_more`, and the next starts after its last workflow.
 */
export const PAGE_BYTES = 1 << 20;
