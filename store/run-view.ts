/**
 * The public Run object (spec "GET /api/v1/runs/{runId}") rendered from a stored record. Shared
 * by the API's reads and the worker's webhook delivery (D20), so a webhook carries exactly what
 * a GET answers; it imports no Koa and no Temporal client.
 */
import type { RunView } from '../api/response-schemas';
import type { RunSnapshot } from '../workflows/definitions';
import type { RunDoc } from './documents';

/** The fields of a record the view shows. */
export type RunViewSource = Pick<RunDoc, '_id' | 'status' | 'published_workflow_id' | 'published_workflow_version_id' | 'output' | 'error' | 'total_cost' | 'created_at' | 'completed_at'>;

/** Renders a stored record, overlaid with a live snapshot when there is one. */
export function runView(doc: RunViewSource, live?: RunSnapshot): RunView {
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
