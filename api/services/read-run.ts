/** Reading a run (spec "GET /api/v1/runs/{runId}"): MongoDB first, the workflow's query while it is live. */
import type { Readable } from 'node:stream';
import { isId } from '../../domain/ids';
import type { Collections } from '../../store/db';
import type { RunDoc } from '../../store/documents';
import { findRun, findRunHead } from '../../store/runs';
import { NotFoundError } from '../errors';
import type { RunGateway } from '../run-gateway';
import type { RunView } from '../response-schemas';
import { runView } from '../../store/run-view';
import type { FinishedRunCache } from './finished-run-cache';
import { streamRunView } from './run-view-stream';

// The rendering lives in store/ so the worker's webhook delivery (D20) shares it without Koa.
export { runView };

/** The caller's run record, or 404 (unknown, malformed or another account's id look the same). */
export async function loadRun(collections: Pick<Collections, 'runs' | 'runChunks'>, accountId: string, runId: string): Promise<RunDoc> {
  const doc = isId('run', runId) ? await findRun(collections, accountId, runId) : null;
  if (!doc) throw notFound(runId);
  return doc;
}

/** What reading a run needs. */
export interface ReadRunDeps {
  collections: Pick<Collections, 'runs' | 'runChunks'>;
  gateway: RunGateway;
  finishedRuns?: FinishedRunCache;
}

/** The current run view: the final record once written (served long after Temporal forgot the run), else live state. */
export async function readRun(deps: ReadRunDeps, accountId: string, runId: string): Promise<RunView> {
  const cached = deps.finishedRuns?.get(accountId, runId);
  if (cached) return cached;
  return viewOf(deps, await loadRun(deps.collections, accountId, runId));
}

/**
 * The answer of GET /api/v1/runs/{runId}: the view, or for a finished big run (D31) the same JSON
 * as a stream that reads one stored chunk at a time, so 100,000 items never sit in memory at once.
 */
export async function readRunBody(deps: ReadRunDeps, accountId: string, runId: string): Promise<RunView | Readable> {
  const cached = deps.finishedRuns?.get(accountId, runId);
  if (cached) return cached;
  const head = isId('run', runId) ? await findRunHead(deps.collections, accountId, runId) : null;
  if (!head) throw notFound(runId);
  if (head.finalized && head.chunks) return streamRunView(deps.collections, head);
  return viewOf(deps, head);
}

/** A loaded record's view (a chunked record must come whole): cached once final, overlaid with the live state before. */
async function viewOf(deps: ReadRunDeps, doc: RunDoc): Promise<RunView> {
  if (doc.finalized) {
    const view = runView(doc);
    if (!doc.chunks) deps.finishedRuns?.set(doc.account_id, view); // a big run's view is too large to keep
    return view;
  }
  // No events wanted here: ask only for status and results.
  const snapshot = await deps.gateway.snapshot(doc._id, Number.MAX_SAFE_INTEGER);
  if (!snapshot) {
    // No news: the stored record says what is known. Read again: the run may have ended since
    // the first read, or been settled just now (a workflow terminated outside, services/settle-run.ts).
    const fresh = await findRun(deps.collections, doc.account_id, doc._id);
    return runView(fresh ?? doc);
  }
  // Completed with an output too large for a query answer: it shows completed once its record is written (moments later).
  if (snapshot.outputDeferred) return runView(doc, { ...snapshot, status: 'running', completed_at_ms: null });
  // No write here: the worker's finalize is the only update of a run document. FerretDB does not
  // isolate concurrent updates of one document, and a "mark running" write raced it and undid it.
  return runView(doc, snapshot);
}

function notFound(runId: string): NotFoundError {
  return new NotFoundError(`No run \`${runId.slice(0, 64)}\`.`);
}
