/**
 * The public Run object (spec "GET /api/v1/runs/{runId}") rendered from a stored record. Shared
 * by the API's reads and the worker's webhook delivery (D20), so a webhook carries exactly what
 * a GET answers; it imports no Koa and no Temporal client.
 */
import type { RunView, WebhookState } from '../api/response-schemas';
import type { RunSnapshot } from '../workflows/definitions';
import type { RunDoc, WebhookDeliveryDoc } from './documents';

/** The fields of a record the view shows. */
export type RunViewSource = Pick<RunDoc, '_id' | 'status' | 'published_workflow_id' | 'published_workflow_version_id' | 'output' | 'error' | 'total_cost' | 'created_at' | 'completed_at' | 'webhook'>;

/**
 * Renders a stored record, overlaid with a live snapshot when there is one, with the state of
 * its webhook delivery (D20) when it has a webhook (no delivery document yet: `pending`).
 */
export function runView(doc: RunViewSource, live?: RunSnapshot, delivery?: WebhookDeliveryDoc | null): RunView {
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
    webhook: doc.webhook ? webhookState(delivery ?? null) : null,
  };
}

/** The caller's view of a delivery document: attempts that failed and go on are `delivering`. */
export function webhookState(delivery: WebhookDeliveryDoc | null): WebhookState {
  if (!delivery) return { status: 'pending', attempts: 0, last_http_status: null, last_error: null, updated_at: null };
  return {
    status: delivery.status === 'pending' && delivery.attempts > 0 ? 'delivering' : delivery.status,
    attempts: delivery.attempts,
    last_http_status: delivery.last_status,
    last_error: delivery.last_error,
    updated_at: delivery.updated_at.toISOString(),
  };
}

/** Whether a run's view can change no more: ended, and its webhook (if any) delivered or given up. */
export function isSettled(view: RunView): boolean {
  return view.webhook === null || view.webhook.status === 'delivered' || view.webhook.status === 'failed';
}
