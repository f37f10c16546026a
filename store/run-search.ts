/**
 * D23, D37: one page of an account's runs, newest first, by any AND of status, workflow, creation
 * time and metadata pairs, and the indexes that serve those queries on MongoDB.
 *
 * Every query has the shape `{account_id, [one equality], _id range}` sorted by `_id` descending,
 * so MongoDB walks one index in order and stops after `limit + 1` matches: the indexes below lead
 * with `account_id`, then the equality, then `_id`. A creation-time bound also becomes an `_id`
 * range (ids begin with their creation time, D5). FerretDB 1.x scans the collection for any of
 * these filters; correct, and only the list pays for it.
 */
import type { Filter, IndexDescription } from 'mongodb';
import { newId } from '../domain/ids';
import type { Collections } from './db';
import type { StoredRunDoc } from './documents';
import { metadataTags } from './run-metadata';

/**
 * The longest a run id may exist before its record is written: an Idempotency-Key's run id is
 * allocated when the key is claimed and its record may be written by a retry up to 24 hours later
 * (D18). So a run created after T has an id made after T minus this.
 */
const ID_BEFORE_RECORD_MS = 24 * 60 * 60_000;

export interface RunSearch {
  accountId: string;
  /** Older than this run id (the cursor). */
  startingAfter?: string;
  /** A stored status (`completed`, `failed`, `cancelled`). */
  status?: 'completed' | 'failed' | 'cancelled';
  /** Only runs not yet finalized (their live status is filtered by the caller). */
  unfinished?: boolean;
  publishedWorkflowId?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  metadata?: Record<string, string>;
  limit: number;
}

/** The indexes of the run list (created at start-up by store/db.ts; docs/deploy.md lists them). */
export const RUN_SEARCH_INDEXES: IndexDescription[] = [
  { key: { account_id: 1, _id: -1 }, name: 'account_newest' },
  { key: { account_id: 1, status: 1, _id: -1 }, name: 'account_status' },
  { key: { account_id: 1, finalized: 1, _id: -1 }, name: 'account_finalized' },
  { key: { account_id: 1, published_workflow_id: 1, _id: -1 }, name: 'account_workflow' },
  // Multikey: one entry per `<key>=<value>` tag (store/run-metadata.ts).
  { key: { account_id: 1, metadata_tags: 1, _id: -1 }, name: 'account_metadata' },
];

/** The smallest run id of a millisecond. */
function firstIdAt(ms: number): string {
  return newId('run', Math.max(0, Math.min(ms, 2 ** 48 - 1)), () => 0);
}

/** The filter of a search (exported for the index tests). */
export function runSearchFilter(s: RunSearch): Filter<StoredRunDoc> {
  // D39: a run whose erasure began is listed no more, though a crash left its record.
  const filter: Filter<StoredRunDoc> = { account_id: s.accountId, deleting: { $ne: true } };
  const id: { $lt?: string; $gte?: string } = {};
  if (s.startingAfter) id.$lt = s.startingAfter;
  if (s.createdBefore) {
    // An id is made before its record: created before T means an id made before T.
    const bound = firstIdAt(s.createdBefore.getTime());
    if (!id.$lt || bound < id.$lt) id.$lt = bound;
  }
  if (s.createdAfter) id.$gte = firstIdAt(s.createdAfter.getTime() - ID_BEFORE_RECORD_MS);
  if (id.$lt || id.$gte) filter._id = id;
  const created: { $gt?: Date; $lt?: Date } = {};
  if (s.createdAfter) created.$gt = s.createdAfter;
  if (s.createdBefore) created.$lt = s.createdBefore;
  if (created.$gt || created.$lt) filter.created_at = created;
  if (s.status) filter.status = s.status;
  if (s.unfinished) filter.finalized = false;
  if (s.publishedWorkflowId) filter.published_workflow_id = s.publishedWorkflowId;
  const tags = s.metadata ? metadataTags(s.metadata) : [];
  if (tags.length === 1) filter.metadata_tags = tags[0];
  else if (tags.length > 1) filter.metadata_tags = { $all: tags };
  return filter;
}

/**
 * Up to `limit + 1` runs of the search, newest first, without their inputs and event logs (the
 * extra one tells `has_more`); with `payload_secret`, so asking a live run's workflow needs no second read (D39).
 */
export function searchRuns(
  c: Pick<Collections, 'runs'>,
  s: RunSearch,
): Promise<Omit<StoredRunDoc, 'inputs' | 'inputs_json' | 'events_json'>[]> {
  // A run's inputs may be a megabyte of rows (D35): a page of 100 would read and parse 100 MB for nothing.
  return c.runs
    .find(runSearchFilter(s), { projection: { events_json: 0, inputs: 0, inputs_json: 0 } })
    .sort({ _id: -1 })
    .limit(s.limit + 1)
    .toArray();
}

/** D39: a page of an account's run ids with whether each has ended, newest first, older than `before` (the `account_newest` index). */
export function accountRunIds(
  c: Pick<Collections, 'runs'>,
  accountId: string,
  before: string | undefined,
  limit: number,
): Promise<Pick<StoredRunDoc, '_id' | 'finalized'>[]> {
  return c.runs
    .find(
      { account_id: accountId, ...(before ? { _id: { $lt: before } } : {}) },
      { projection: { _id: 1, finalized: 1 } },
    )
    .sort({ _id: -1 })
    .limit(limit)
    .toArray();
}
