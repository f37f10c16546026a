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
  type SerializationContext,
} from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { PayloadKey } from '../../config';
import { SECRET_TTL_MS, runOfWorkflowId, runPayloadKey, type RunSecrets } from './run-keys';

/** The `encoding` of a sealed payload (the same value as Temporal's sample, so its tooling recognises it). */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata entry naming the key a payload was sealed with. */
export const KEY_ID_METADATA = 'encryption-key-id';
/** D39: metadata entry naming the run whose own key (lib/codec/run-keys.ts) sealed the payload. */
export const RUN_ID_METADATA = 'encryption-run-id';

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

/** What a run-keyed payload is sealed with: the run and its key derived from `key` (D39). */
export interface RunSeal {
  runId: string;
  key: Buffer;
}

/** The authenticated data of a payload: the key id, and the run id of a run-keyed one. */
const aad = (keyId: string, runId?: string) => Buffer.from(runId ? `${keyId}/${runId}` : keyId);

/**
 * Seals one payload (metadata and data together) under `key`, or under the run's own key derived
 * from it; the key id (and run id) are also authenticated (AAD).
 */
export function encryptPayload(payload: Payload, key: PayloadKey, run?: RunSeal): Payload {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', run ? run.key : key.key, iv);
  cipher.setAAD(aad(key.id, run?.runId));
  const plain = temporal.api.common.v1.Payload.encode(payload).finish();
  const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  return {
    metadata: {
      [METADATA_ENCODING_KEY]: utf8(ENCRYPTED_ENCODING),
      [KEY_ID_METADATA]: utf8(key.id),
      ...(run ? { [RUN_ID_METADATA]: utf8(run.runId) } : {}),
    },
    data: sealed,
  };
}

/** The run whose own key sealed a payload, or null. */
export function sealedForRun(payload: Payload): string | null {
  return text(payload.metadata?.[RUN_ID_METADATA]) || null;
}

/** D39: a payload of a deleted run: its key is gone with it, nothing can open it. */
export class RunDeletedError extends ValueError {
  constructor(readonly runId: string) {
    super(`payload of run ${runId} cannot be opened: the run was deleted and its key with it`);
  }
}

/** Whether a payload was sealed by this codec. */
export function isEncrypted(payload: Payload): boolean {
  return text(payload.metadata?.[METADATA_ENCODING_KEY]) === ENCRYPTED_ENCODING;
}

/**
 * Opens a sealed payload; any other payload is returned as it is (runs started before D32). A
 * run-keyed payload needs its run's secret (`runSecret`, D39).
 */
export function decryptPayload(
  payload: Payload,
  ring: KeyRing,
  runSecret?: Buffer,
  deriveKey: typeof runPayloadKey = runPayloadKey,
): Payload {
  if (!isEncrypted(payload)) return payload;
  const keyId = text(payload.metadata?.[KEY_ID_METADATA]);
  const configured = ring.byId.get(keyId);
  // A retired key that is still needed: the worker retries the task until an operator adds it back.
  if (!configured)
    throw new ValueError(`payload sealed with unknown key '${keyId}': add it to PAYLOAD_KEYS`);
  const runId = sealedForRun(payload) ?? undefined;
  if (runId && !runSecret) throw new RunDeletedError(runId);
  const key = runId && runSecret ? deriveKey(configured, runSecret, runId, keyId) : configured;
  const data = Buffer.from(payload.data ?? new Uint8Array());
  if (data.length < IV_BYTES + TAG_BYTES) throw new ValueError('sealed payload is truncated');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
    decipher.setAAD(aad(keyId, runId));
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
  /** Derived run keys by `<key id>/<run id>` (HKDF per payload would cost more than the cipher). */
  private readonly runKeys = new Map<string, { key: Buffer; at: number }>();

  /**
   * `runSecrets` (D39): with it, payloads of a run's workflows and activities are sealed under
   * that run's own key; without it (tools that never touch runs) everything uses the configured key.
   */
  constructor(
    private readonly loadKeys: () => Promise<KeyRing>,
    readonly runSecrets?: RunSecrets,
  ) {}

  /** The key ring, loaded on first use; a failed load is retried on the next call. */
  keys(): Promise<KeyRing> {
    this.ring ??= this.loadKeys().catch((err: unknown) => {
      this.ring = undefined;
      throw err;
    });
    return this.ring;
  }

  async encode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    const { current } = await this.keys();
    const runId = this.runSecrets ? runOfWorkflowId(context?.workflowId) : null;
    if (!runId) return payloads.map((p) => encryptPayload(p, current));
    const secret = await this.runSecrets!.get(runId);
    // A run with no record here (deleted, or another installation's on a shared task queue): nothing
    // new of it may be readable under a key that outlives it, yet its task must fail, not the
    // worker. What it writes (the failure of a task that could not open its input) is sealed under
    // a key made for this call and never kept: as unreadable as the rest of the run's history. A
    // throw here reached the SDK while it reported that failure and stopped the whole worker.
    if (secret === null)
      return payloads.map((p) => encryptPayload(p, current, { runId, key: randomBytes(32) }));
    // A run recorded before per-run keys: the configured key, as before.
    if (secret === undefined) return payloads.map((p) => encryptPayload(p, current));
    const seal = { runId, key: this.derive(current.key, secret, runId, current.id) };
    return payloads.map((p) => encryptPayload(p, current, seal));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    const ring = await this.keys();
    const secrets = await this.secretsOf(payloads);
    return payloads.map((p) => {
      const runId = sealedForRun(p);
      return decryptPayload(
        p,
        ring,
        runId ? (secrets.get(runId) ?? undefined) : undefined,
        this.derive,
      );
    });
  }

  /**
   * The codec server's decode (D32, D39): like `decode`, but a payload of a deleted run is
   * answered as it is, still sealed, so the rest of that history still reads in the UI.
   */
  async decodeForOperators(payloads: Payload[]): Promise<Payload[]> {
    const ring = await this.keys();
    const secrets = await this.secretsOf(payloads);
    return payloads.map((p) => {
      const runId = sealedForRun(p);
      const secret = runId ? secrets.get(runId) : undefined;
      if (runId && !secret) return p;
      return decryptPayload(p, ring, secret ?? undefined, this.derive);
    });
  }

  /** D39: forgets a deleted run's secret and derived keys in this process at once. */
  forgetRun(runId: string): void {
    this.runSecrets?.forget(runId);
    for (const id of this.runKeys.keys()) if (id.endsWith(`/${runId}`)) this.runKeys.delete(id);
  }

  /** The secrets of the runs whose own keys sealed any of `payloads` (null: deleted). */
  private async secretsOf(payloads: Payload[]): Promise<Map<string, Buffer | null | undefined>> {
    const runIds = [...new Set(payloads.map(sealedForRun).filter((r): r is string => !!r))];
    const secrets = new Map<string, Buffer | null | undefined>();
    for (const runId of runIds)
      secrets.set(runId, this.runSecrets ? await this.runSecrets.get(runId) : null);
    return secrets;
  }

  /** A run's key under one configured key, derived once per process (cached by key id and run). */
  private readonly derive = (
    configured: Buffer,
    secret: Buffer,
    runId: string,
    keyId = '',
  ): Buffer => {
    const id = `${keyId}/${runId}`;
    const cached = this.runKeys.get(id);
    // Kept no longer than the secret it comes from (lib/codec/run-keys.ts SECRET_TTL_MS).
    if (cached && Date.now() - cached.at < SECRET_TTL_MS) return cached.key;
    const key = runPayloadKey(configured, secret, runId);
    this.runKeys.delete(id);
    this.runKeys.set(id, { key, at: Date.now() });
    if (this.runKeys.size > 20_000) this.runKeys.delete(this.runKeys.keys().next().value!);
    return key;
  };
}
