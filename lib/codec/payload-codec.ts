/**
 * D32: the payload codec that keeps customer data out of Temporal in plaintext. Every payload
 * (workflow and activity arguments and results, query answers, summaries, failure messages)
 * is serialized as a whole and sealed with AES-256-GCM under the newest key; the key's id
 * travels in the payload's metadata so any configured key can open it again (rotation).
 * Modelled on Temporal's samples-typescript `encryption` sample, with Node's crypto. Runs
 * outside the workflow sandbox only (clients, workers, the codec server): never import it from
 * workflows/.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import {
  METADATA_ENCODING_KEY,
  ValueError,
  type Payload,
  type PayloadCodec,
} from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { PayloadKey } from '../../config';

/** The `encoding` of a sealed payload (the same value as Temporal's sample, so its tooling recognises it). */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata entry naming the key a payload was sealed with. */
export const KEY_ID_METADATA = 'encryption-key-id';

const IV_BYTES = 12; // GCM's standard nonce; random per payload (2^32 payloads per key stay far below the collision bound)
const TAG_BYTES = 16;

/** The keys a codec uses: `current` seals, every key in `byId` (current included) opens. */
export interface KeyRing {
  current: PayloadKey;
  byId: ReadonlyMap<string, Buffer>;
}

/** A key ring from keys oldest first: the last one seals. */
export function keyRing(keys: readonly PayloadKey[]): KeyRing {
  if (keys.length === 0) throw new Error('a key ring needs at least one key');
  return { current: keys[keys.length - 1], byId: new Map(keys.map((k) => [k.id, k.key])) };
}

const utf8 = (text: string) => new TextEncoder().encode(text);
const text = (bytes: Uint8Array | null | undefined) =>
  bytes ? Buffer.from(bytes).toString('utf8') : '';

/** Seals one payload (metadata and data together) under `key`; the key id is also authenticated (AAD). */
export function encryptPayload(payload: Payload, key: PayloadKey): Payload {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(Buffer.from(key.id));
  const plain = temporal.api.common.v1.Payload.encode(payload).finish();
  const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  return {
    metadata: {
      [METADATA_ENCODING_KEY]: utf8(ENCRYPTED_ENCODING),
      [KEY_ID_METADATA]: utf8(key.id),
    },
    data: sealed,
  };
}

/** Whether a payload was sealed by this codec. */
export function isEncrypted(payload: Payload): boolean {
  return text(payload.metadata?.[METADATA_ENCODING_KEY]) === ENCRYPTED_ENCODING;
}

/** Opens a sealed payload; any other payload is returned as it is (runs started before D32). */
export function decryptPayload(payload: Payload, ring: KeyRing): Payload {
  if (!isEncrypted(payload)) return payload;
  const keyId = text(payload.metadata?.[KEY_ID_METADATA]);
  const key = ring.byId.get(keyId);
  // A retired key that is still needed: the worker retries the task until an operator adds it back.
  if (!key)
    throw new ValueError(`payload sealed with unknown key '${keyId}': add it to PAYLOAD_KEYS`);
  const data = Buffer.from(payload.data ?? new Uint8Array());
  if (data.length < IV_BYTES + TAG_BYTES) throw new ValueError('sealed payload is truncated');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(keyId));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    const plain = Buffer.concat([
      decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
      decipher.final(),
    ]);
    return temporal.api.common.v1.Payload.decode(plain) as Payload;
  } catch {
    throw new ValueError(`sealed payload does not authenticate under key '${keyId}'`);
  }
}

/**
 * The PayloadCodec of clients and workers. Its keys come from a function (resolved once, then
 * cached) so a process can build its client before the development key is read from MongoDB.
 */
export class EncryptionCodec implements PayloadCodec {
  private ring?: Promise<KeyRing>;

  constructor(private readonly loadKeys: () => Promise<KeyRing>) {}

  /** The key ring, loaded on first use; a failed load is retried on the next call. */
  keys(): Promise<KeyRing> {
    this.ring ??= this.loadKeys().catch((err: unknown) => {
      this.ring = undefined;
      throw err;
    });
    return this.ring;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { current } = await this.keys();
    return payloads.map((p) => encryptPayload(p, current));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    const ring = await this.keys();
    return payloads.map((p) => decryptPayload(p, ring));
  }
}
