/**
 * Standard Webhooks signing (D20, the scheme Replicate and Svix use): the receiver recomputes
 * HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>` with the account's secret and
 * compares it with `webhook-signature`. The key is the base64 part of `whsec_...`, decoded.
 */
import { createHmac } from 'node:crypto';

export interface WebhookHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** The HMAC key of a `whsec_` secret (the prefix is optional, as in the reference libraries). */
export function secretKey(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret,
    'base64',
  );
}

/** The three signature headers of one delivery attempt; `timestampSeconds` is the attempt's Unix time. */
export function signWebhook(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): WebhookHeaders {
  const timestamp = String(Math.floor(timestampSeconds));
  const signature = createHmac('sha256', secretKey(secret))
    .update(`${id}.${timestamp}.${body}`, 'utf8')
    .digest('base64');
  return {
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${signature}`,
  };
}
