/**
 * D20 webhook deliveries: one document per run's delivery, `_id` = its `webhook-id`, so the
 * state of a webhook is one lookup. Attempts of one delivery run one after another (Temporal
 * retries an activity only after the previous attempt ended), so these updates never race.
 */
import type { Collections } from './db';
import type { WebhookDeliveryDoc } from './documents';

type DeliveryCollections = Pick<Collections, 'webhookDeliveries'>;

export interface DeliveryRef {
  id: string;
  runId: string;
  accountId: string;
  url: string;
}

/** Records one attempt: `delivered` on a 2xx, else `pending` (the delivery goes on or is given up by the workflow). */
export async function recordAttempt(
  c: DeliveryCollections,
  ref: DeliveryRef,
  outcome: { status: 'pending' | 'delivered'; httpStatus: number | null; error: string | null },
): Promise<void> {
  const now = new Date();
  await c.webhookDeliveries.updateOne(
    { _id: ref.id },
    {
      $set: {
        status: outcome.status,
        last_status: outcome.httpStatus,
        last_error: outcome.error,
        url: ref.url,
        updated_at: now,
      },
      $inc: { attempts: 1 },
      $setOnInsert: { run_id: ref.runId, account_id: ref.accountId, created_at: now },
    },
    { upsert: true },
  );
}

/** Marks a delivery given up (refused, a permanent 4xx, or 24 h of failures); a delivered one stays delivered. */
export async function recordGivenUp(
  c: DeliveryCollections,
  ref: DeliveryRef,
  error: string,
): Promise<void> {
  const now = new Date();
  const res = await c.webhookDeliveries.updateOne(
    { _id: ref.id, status: { $ne: 'delivered' } },
    { $set: { status: 'failed', last_error: error, updated_at: now } },
  );
  if (res.matchedCount === 1) return;
  // No attempt got as far as recording itself: write the whole document (a second writer loses harmlessly).
  const doc: WebhookDeliveryDoc = {
    _id: ref.id,
    run_id: ref.runId,
    account_id: ref.accountId,
    url: ref.url,
    status: 'failed',
    attempts: 0,
    last_status: null,
    last_error: error,
    created_at: now,
    updated_at: now,
  };
  await c.webhookDeliveries.insertOne(doc).catch(() => undefined);
}

/** The delivery of a run's webhook, or null when the run had none (or it has not been attempted yet). */
export function findDelivery(
  c: DeliveryCollections,
  id: string,
): Promise<WebhookDeliveryDoc | null> {
  return c.webhookDeliveries.findOne({ _id: id });
}

/** The deliveries of these runs, by run id, in one query (none asked: none read). */
export async function deliveriesOfRuns(
  c: DeliveryCollections,
  deliveryIds: string[],
): Promise<Map<string, WebhookDeliveryDoc>> {
  if (deliveryIds.length === 0) return new Map();
  const docs = await c.webhookDeliveries.find({ _id: { $in: deliveryIds } }).toArray();
  return new Map(docs.map((d) => [d.run_id, d]));
}
