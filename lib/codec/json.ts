/**
 * The JSON form of payloads in Temporal's codec-server protocol (what the Temporal UI and CLI
 * send to `/decode` and `/encode`): `{"payloads": [{"metadata": {"k": base64}, "data": base64}]}`,
 * the proto3 JSON mapping of `temporal.api.common.v1.Payloads`.
 */
import type { Payload } from '@temporalio/common';
import { z } from 'zod';

const base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, { message: 'must be base64' });

/** A codec-server request body. */
export const PayloadsJsonSchema = z.object({
  payloads: z.array(
    z.object({ metadata: z.record(z.string(), base64).optional(), data: base64.optional() }),
  ),
});
export type PayloadsJson = z.infer<typeof PayloadsJsonSchema>;

const bytes = (b64: string) => new Uint8Array(Buffer.from(b64, 'base64'));
const b64 = (data: Uint8Array | null | undefined) =>
  Buffer.from(data ?? new Uint8Array()).toString('base64');

/** JSON payloads to SDK payloads. */
export function payloadsFromJson(json: PayloadsJson): Payload[] {
  return json.payloads.map((p) => ({
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, bytes(v)])),
    data: bytes(p.data ?? ''),
  }));
}

/** SDK payloads to JSON payloads. */
export function payloadsToJson(payloads: Payload[]): PayloadsJson {
  return {
    payloads: payloads.map((p) => ({
      metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, b64(v)])),
      data: b64(p.data),
    })),
  };
}
