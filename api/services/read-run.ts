/** Reading a run (spec "GET /api/v1/runs/{runId}"): MongoDB first, the workflow's query while it is live. */
import { isId } from '../../domain/ids';
import type { Collections } from '../../store/db';
import type { RunDoc } from '../../store/documents';
import { findRun } from '../../store/runs';
import { findDelivery } from '../../store/webhook-deliveries';
import { webhookMessageId } from '../../workflows/definitions';
import { NotFoundError } from '../errors';
import type { RunGateway } from '../run-gateway';
import type { RunView } from '../response-schemas';
import { isSettled, runView } from '../../store/run-view';
import type { FinishedRunCache } from './finished-run-cache';

// The rendering lives in store/ so the worker's webhook delivery (D20) shares it without Koa.
export { runView };

/** The caller's run record, or 404 (unknown, malformed or another account's id look the same). */
export async function loadRun(collections: Pick<Collections, 'runs' | 'runChunks'>, accountId: string, runId: string): Promise<RunDoc> {
  const doc = isId('run', runId) ? await findRun(collections, accountId, runId) : null;
  if (!doc) throw new NotFoundError(`No run \`${runId.slice(0, 64)}\`.`);
  return doc;
}

/** What reading a run needs. */
export interface ReadRunDeps {
  collections: Pick<Collections, 'runs' | 'runChunks' | 'webhookDeliveries'>;
  gateway: RunGateway;
  finishedRuns?: FinishedRunCache;
}

/** The current run view: the final record once written (served long after Temporal forgot the run), else live state. */
export async function readRun(
  deps: ReadRunDeps,
  accountId: string,
  runId: string,
): Promise<RunView> {
  const cached = deps.finishedRuns?.get(accountId, runId);
  if (cached) return cached;
  const doc = await loadRun(deps.collections, accountId, runId);
  if (doc.finalized) {
    // D20: a finished run with a webhook shows its delivery (one more lookup, for those runs only).
    const delivery = doc.webhook ? await findDelivery(deps.collections, webhookMessageId(doc._id)) : null;
    const view = runView(doc, undefined, delivery);
    // Cached only once nothing can change it, so a delivery's progress is never served stale.
    if (isSettled(view)) deps.finishedRuns?.set(accountId, view);
    return view;
  }
  // No events wanted here: ask only for status and results.
  const snapshot = await deps.gateway.snapshot(runId, Number.MAX_SAFE_INTEGER);
  if (!snapshot) return runView(doc);
  // Completed with an output too large for a query answer: it shows completed once its record is written (moments later).
  if (snapshot.outputDeferred) return runView(doc, { ...snapshot, status: 'running', completed_at_ms: null });
  // No write here: the worker's finalize is the only update of a run document. FerretDB does not
  // isolate concurrent updates of one document, and a "mark running" write raced it and undid it.
  return runView(doc, snapshot);
}
