/**
 * The public Run object (spec "GET /api/v1/runs/{runId}"): its schema (part of the OpenAPI
 * document) and its rendering from a stored record, overlaid with a live snapshot. Shared by the
 * API's reads and the worker's webhook delivery (D20), so a webhook carries exactly what a GET
 * answers.
 */
import { z } from 'zod';
import { ItemErrorSchema, PartSchema } from './parts';
import {
  WEBHOOK_DELIVERY_WINDOW_MS,
  type RunOutput,
  type RunSnapshot,
  type RunStatus,
} from './run';
import { emptyUsage, type RunUsage } from './run-usage';

/** An ISO 8601 date-time with an offset, as every time in the API is written. */
export const dateTime = z.iso.datetime({ offset: true });

export const RunStatusSchema = z.enum(['pending', 'running', 'completed', 'failed', 'cancelled']);

export const OutputItemSchema = z.object({
  id: z.string().describe('Stable item id (`item_...`), the same in every read and event (D5).'),
  item_index: z.int().min(0),
  status: z.enum(['completed', 'failed', 'pending', 'running']),
  parts: z.array(PartSchema),
  error: ItemErrorSchema.optional(),
});

/** D20: how a run's webhook delivery went, as the caller sees it on the run. */
export const WebhookStateSchema = z
  .object({
    status: z
      .enum(['pending', 'delivering', 'delivered', 'failed'])
      .describe(
        '`pending`: no attempt yet (the run has not ended, or its first attempt is on its way); `delivering`: attempts failed and are retried (24 h in all); `delivered`: a 2xx answer; `failed`: given up (refused address, a 4xx, or 24 h of failures; also one not settled 25 h after the run ended, which an operator stopped).',
      ),
    attempts: z.int().min(0).describe('Attempts made so far.'),
    last_http_status: z
      .int()
      .nullable()
      .describe(
        'HTTP status of the last answer; null when there was none (refused, unreachable, timed out).',
      ),
    last_error: z
      .string()
      .nullable()
      .describe(
        'Why the last attempt failed, or why the delivery was given up; null after a success.',
      ),
    updated_at: dateTime.nullable().describe('When the last attempt ended; null before the first.'),
  })
  .describe("D20: the delivery of the run's webhook; null when the run has none.");
export type WebhookState = z.infer<typeof WebhookStateSchema>;

const NodeUsageSchema = z.object({
  provider_calls: z
    .int()
    .min(0)
    .describe('Provider calls made (a refused call counts; a retried call counts again).'),
  input_tokens: z
    .int()
    .min(0)
    .describe('Input (prompt) tokens as the provider reported them; 0 where none.'),
  output_tokens: z
    .int()
    .min(0)
    .describe('Output (completion) tokens as the provider reported them; 0 where none.'),
  cost: z.number().min(0).describe('USD this node cost by the price table (D17).'),
  items_completed: z.int().min(0),
  items_failed: z.int().min(0),
});

/** D36: what a run used (domain/run-usage.ts). */
export const RunUsageSchema = z
  .object({
    provider_calls: z.int().min(0),
    input_tokens: z.int().min(0),
    output_tokens: z.int().min(0),
    by_node: z
      .record(z.string(), NodeUsageSchema)
      .describe(
        'Per `llm`, `http_request`, `image_generation` and `model` node, by node id (a node appears once it has run).',
      ),
  })
  .describe(
    'D36: what the run used so far (live) or in all (ended): provider calls, tokens as the provider reported them, and per node calls, tokens, cost and items. Runs recorded before usage existed show zeros.',
  );

export const RunSchema = z.object({
  id: z.string(),
  status: RunStatusSchema,
  published_workflow_id: z.string().nullable(),
  published_workflow_version_id: z.string().nullable(),
  output: z
    .record(z.string(), z.array(OutputItemSchema))
    .nullable()
    .describe(
      'Always present. When `status` is `completed`: normalized result label → ordered items; `null` in every other status.',
    ),
  error: z.string().nullable(),
  total_cost: z.number().nullable().describe('USD.'),
  created_at: dateTime.nullable(),
  completed_at: dateTime.nullable(),
  webhook: WebhookStateSchema.nullable(),
  metadata: z
    .record(z.string(), z.string())
    .describe('D37: the key/value pairs the run was started with (`{}` when none).'),
  parent_run_id: z
    .string()
    .nullable()
    .describe(
      'D38: the run this one re-runs (`POST /api/v1/runs/{runId}/rerun`); null when it is not a re-run.',
    ),
  usage: RunUsageSchema,
});
export type RunView = z.infer<typeof RunSchema>;

/** The fields of a stored run record the view shows (store/documents.ts RunDoc has them all). */
export interface RunViewSource {
  _id: string;
  status: RunStatus;
  published_workflow_id: string;
  published_workflow_version_id: string;
  output: RunOutput | null;
  error: string | null;
  total_cost: number | null;
  created_at: Date;
  completed_at: Date | null;
  webhook?: string | null;
  /** D37: absent in records written before metadata existed. */
  metadata?: Record<string, string>;
  /** D38: the run this one re-runs; absent in records that are not re-runs. */
  parent_run_id?: string | null;
  /** D36: absent in records written before usage existed (shown as zeros). */
  usage?: RunUsage;
}

/** The fields of a webhook delivery record the view shows (store/documents.ts WebhookDeliveryDoc). */
export interface DeliverySource {
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  updated_at: Date;
}

/**
 * Renders a stored record, overlaid with a live snapshot when there is one, with the state of
 * its webhook delivery (D20) when it has a webhook (no delivery document yet: `pending`) as of
 * `asOfMs` (webhookState).
 */
export function runView(
  doc: RunViewSource,
  live?: RunSnapshot,
  delivery?: DeliverySource | null,
  asOfMs?: number,
): RunView {
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
    webhook: doc.webhook ? webhookState(delivery ?? null, completedAtMs, asOfMs) : null,
    metadata: doc.metadata ?? {},
    parent_run_id: doc.parent_run_id ?? null,
    usage: live?.usage ?? doc.usage ?? emptyUsage(),
  };
}

/**
 * Past its window and this margin after the run ended, a delivery still unsettled was stopped
 * from outside (an operator's terminate in Temporal): its give-up was never written.
 */
const UNSETTLED_MARGIN_MS = 3_600_000;

/**
 * The caller's view of a delivery document: attempts that failed and go on are `delivering`. As
 * of `asOfMs` (the reader's clock; absent: as stored), a delivery of a run that ended
 * (`endedAtMs`) more than D20's 24 h and an hour before is `failed` whatever its record says:
 * nothing delivers it any more, and a client waiting for it to settle must not wait for good.
 */
export function webhookState(
  delivery: DeliverySource | null,
  endedAtMs: number | null,
  asOfMs?: number,
): WebhookState {
  const stopped =
    endedAtMs !== null &&
    asOfMs !== undefined &&
    asOfMs - endedAtMs > WEBHOOK_DELIVERY_WINDOW_MS + UNSETTLED_MARGIN_MS;
  const status = !delivery
    ? 'pending'
    : delivery.status === 'pending' && delivery.attempts > 0
      ? 'delivering'
      : delivery.status;
  const givenUp = stopped && (status === 'pending' || status === 'delivering');
  return {
    status: givenUp ? 'failed' : status,
    attempts: delivery?.attempts ?? 0,
    last_http_status: delivery?.last_status ?? null,
    last_error:
      delivery?.last_error ?? (givenUp ? "not delivered within 24 h of the run's end" : null),
    updated_at: delivery ? delivery.updated_at.toISOString() : null,
  };
}

/** Whether a run's view can change no more: ended, and its webhook (if any) delivered or given up. */
export function isSettled(view: RunView): boolean {
  return (
    view.webhook === null || view.webhook.status === 'delivered' || view.webhook.status === 'failed'
  );
}
