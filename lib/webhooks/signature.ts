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
  const signing = signer(secret, id, timestampSeconds);
  signing.hmac.update(body, 'utf8');
  return signing.headers();
}

/**
 * The same for a body too large to hold (a big run's, D31), in one pass over its parts; also its
 * length in bytes, which a request sending it as a stream declares.
 */
export async function signWebhookParts(
  secret: string,
  id: string,
  timestampSeconds: number,
  parts: AsyncIterable<string>,
): Promise<{ headers: WebhookHeaders; length: number }> {
  const signing = signer(secret, id, timestampSeconds);
  let length = 0;
  for await (const part of parts) {
    signing.hmac.update(part, 'utf8');
    length += Buffer.byteLength(part, 'utf8');
  }
  return { headers: signing.headers(), length };
}

/** An HMAC over `<id>.<timestamp>.`, to which the body is added; then the headers. */
function signer(secret: string, id: string, timestampSeconds: number) {
  const timestamp = String(Math.floor(timestampSeconds));
  const hmac = createHmac('sha256', secretKey(secret)).update(`${id}.${timestamp}.`, 'utf8');
  return {
    hmac,
    headers: (): WebhookHeaders => ({
      'webhook-id': id,
      'webhook-timestamp': timestamp,
      'webhook-signature': `v1,${hmac.digest('base64')}`,
    }),
  };
}
