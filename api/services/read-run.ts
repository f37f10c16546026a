/** Reading a run (spec "GET /api/v1/runs/{runId}"): MongoDB first, the workflow's query while it is live. */
import { isId } from '../../domain/ids';
import type { Collections } from '../../store/db';
import type { RunDoc } from '../../store/documents';
import { findRun } from '../../store/runs';
import type { RunSnapshot } from '../../workflows/definitions';
import { NotFoundError } from '../errors';
import type { RunGateway } from '../run-gateway';
import type { RunView } from '../response-schemas';

/** The caller's run record, or 404 (unknown, malformed or another account's id look the same). */
export async function loadRun(collections: Pick<Collections, 'runs'>, accountId: string, runId: string): Promise<RunDoc> {
  const doc = isId('run', runId) ? await findRun(collections, accountId, runId) : null;
  if (!doc) throw new NotFoundError(`No run \`${runId.slice(0, 64)}\`.`);
  return doc;
}

/** The current run view: the final record once written (served long after Temporal forgot the run), else live state. */
export async function readRun(
  deps: { collections: Pick<Collections, 'runs'>; gateway: RunGateway },
  accountId: string,
  runId: string,
): Promise<RunView> {
  const doc = await loadRun(deps.collections, accountId, runId);
  if (doc.finalized) return runView(doc);
  // No events wanted here: ask only for status and results.
  const snapshot = await deps.gateway.snapshot(runId, Number.MAX_SAFE_INTEGER);
  if (!snapshot) return runView(doc);
  if (doc.status === 'pending') {
    // Remember that a worker has it, so a later read without Temporal's answer does not step back to pending.
    void deps.collections.runs.updateOne({ _id: doc._id, status: 'pending' }, { $set: { status: 'running' } }).catch(() => undefined);
  }
  return runView(doc, snapshot);
}

/** Renders a stored record, overlaid with a live snapshot when there is one. */
export function runView(doc: RunDoc, live?: RunSnapshot): RunView {
  const status = live?.status ?? doc.status;
  const completedAtMs = live?.completed_at_ms ?? doc.completed_at?.getTime() ?? null;
  return {
    id: doc._id,
    status,
    published_workflow_id: doc.published_workflow_id,
    published_workflow_version_id: doc.published_workflow_version_id,
    output: status === 'completed' ? (live?.output ?? doc.output) : null,
    error: status === 'failed' ? (live?.error ?? doc.error) : null,
    total_cost: live ? live.total_cost : doc.total_cost,
    created_at: doc.created_at.toISOString(),
    completed_at: completedAtMs === null ? null : new Date(completedAtMs).toISOString(),
  };
}
