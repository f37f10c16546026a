/** D23, D37: the caller's runs, newest first, cursor paginated, filtered by status, workflow, time and metadata. */
import type { Collections } from '../../store/db';
import { fromStored } from '../../store/runs';
import { searchRuns, type RunSearch } from '../../store/run-search';
import { findWorkflow } from '../../store/workflows';
import type { RunGateway } from '../temporal/run-gateway';
import type { ListRunsQuery } from '../contract/request-schemas';
import type { RunListSchema } from '../contract/response-schemas';
import type { z } from 'zod';
import { runView } from '../../domain/run-view';
import { rememberSecret, shownSnapshot } from './read-run';
import { isBigRun } from '../../store/run-view-stream';
import type { RunDoc } from '../../store/documents';
import { entriesWithinPage } from '../limits/page-bytes';
import { deliveriesOfRuns } from '../../store/webhook-deliveries';
import { webhookMessageId } from '../../domain/run';

/** D23: a page of runs, as api/contract/response-schemas.ts defines it. */
export type RunList = z.infer<typeof RunListSchema>;

/**
 * One page of runs. Ids sort by creation time (D5), so `_id < starting_after` is the cursor.
 * Unfinished runs on the page show their live status; `pending`/`running` filters are applied to
 * the live status of the page's unfinished runs, so such a page may hold fewer than `limit`.
 */
/** What listing runs needs. */
export interface ListRunsDeps {
  collections: Pick<
    Collections,
    'runs' | 'workflows' | 'workflowVersions' | 'workflowVersionNumbers' | 'webhookDeliveries'
  >;
  gateway: RunGateway;
}

export async function listRuns(
  deps: ListRunsDeps,
  accountId: string,
  query: ListRunsQuery,
): Promise<RunList> {
  // The stored status of a live run stays `pending` until it ends (only finalize updates a run
  // document), so the live statuses are filtered after asking the runs themselves.
  const { status } = query;
  const liveFilter = status === 'pending' || status === 'running' ? status : undefined;
  const search: RunSearch = {
    accountId,
    limit: query.limit,
    startingAfter: query.starting_after,
    createdAfter: query.created_after,
    createdBefore: query.created_before,
    metadata: query.metadata,
    ...(status === 'pending' || status === 'running' ? { unfinished: true } : { status }),
  };
  // Both spellings given are two filters, AND-ed like the rest: they must name the same workflow.
  const empty: RunList = {
    object: 'list',
    data: [],
    first_id: null,
    last_id: null,
    has_more: false,
  };
  for (const ref of [query.workflow_id, query.workflowId]) {
    if (!ref) continue;
    const workflow = await findWorkflow(deps.collections, accountId, ref);
    if (!workflow || (search.publishedWorkflowId && search.publishedWorkflowId !== workflow._id))
      return empty;
    search.publishedWorkflowId = workflow._id;
  }
  const docs = await searchRuns(deps.collections, search);
  const found = docs.slice(0, query.limit).map(fromStored);
  const page = found.slice(0, entriesWithinPage(found, itemBytes));
  // D20: the deliveries of the page's finished runs with a webhook, in one query.
  const deliveries = await deliveriesOfRuns(
    deps.collections,
    page.filter((d) => d.finalized && d.webhook).map((d) => webhookMessageId(d._id)),
  );
  const data = await Promise.all(
    page.map(async (doc) => {
      // D31: a big run's items are read in pages (GET of the run, /outputs): none of them here.
      if (isBigRun(doc))
        return { ...runView(doc, undefined, deliveries.get(doc._id), Date.now()), output: null };
      if (doc.finalized) return runView(doc, undefined, deliveries.get(doc._id), Date.now());
      rememberSecret(deps, doc);
      const live = await deps.gateway.snapshot(doc._id, Number.MAX_SAFE_INTEGER);
      return runView(doc, live ? shownSnapshot(live) : undefined);
    }),
  );
  const shown = liveFilter ? data.filter((run) => run.status === liveFilter) : data;
  return {
    object: 'list',
    data: shown,
    first_id: page[0]?._id ?? null,
    last_id: page.at(-1)?._id ?? null,
    has_more: docs.length > page.length,
  };
}

/** The bytes of the items a run's entry shows (a live run's come from its workflow, bounded there). */
function itemBytes(doc: RunDoc): number {
  return doc.finalized && !isBigRun(doc) && doc.output ? JSON.stringify(doc.output).length : 0;
}
