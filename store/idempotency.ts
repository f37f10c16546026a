/**
 * Idempotency keys of the start call (D18): one document per account and key, created by an
 * insert whose unique `_id` decides which of several concurrent requests owns the key. The
 * document binds the key to the request's hash and to a run id allocated before the run exists.
 */
import { createHash } from 'node:crypto';
import { bulkOutcomes } from './bulk-outcomes';
import type { Collections } from './db';
import type { IdempotencyKeyDoc } from './documents';
import type { Outcome } from './group-commit';
import { isDuplicateKey } from './ledger';

/** D18: a key is remembered for 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;

type KeyCollections = Pick<Collections, 'idempotencyKeys'>;

/** The document id of an account's key: keys of different accounts never meet. */
export function idempotencyId(accountId: string, key: string): string {
  return `${accountId}:${key}`;
}

/** SHA-256 hex of the canonical JSON (object keys sorted) of a request, so key order and spacing do not matter. */
export function requestHash(request: unknown): string {
  return createHash('sha256').update(canonicalJson(request), 'utf8').digest('hex');
}

/** JSON with object keys sorted at every level; `undefined` members are left out, as JSON.stringify does. */
export function canonicalJson(value: unknown): string {
  // Bodies are depth-bounded by the JSON parser middleware (D10), so recursion is safe here.
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  );
}

/**
 * Claims `claim._id` for `claim.run_id`, or returns the live document that owns it already (its
 * `run_id` then differs). A document past `expires_at` counts as absent, even before it is removed.
 * `insert` is how the claim is inserted (the API's group commit, store/run-writes.ts); it must
 * reject with code 11000 when the `_id` is taken, as the single insert does.
 */
export async function claimIdempotencyKey(
  c: KeyCollections,
  claim: IdempotencyKeyDoc,
  insert: (claim: IdempotencyKeyDoc) => Promise<unknown> = (doc) =>
    c.idempotencyKeys.insertOne(doc),
): Promise<IdempotencyKeyDoc> {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await insert(claim);
      return claim;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    const now = new Date();
    const existing = await c.idempotencyKeys.findOne({ _id: claim._id });
    if (existing && existing.expires_at > now) return existing;
    // Expired and not yet removed (or removed meanwhile): clear it, guarded by its expiry, and insert again.
    if (existing) await c.idempotencyKeys.deleteOne({ _id: claim._id, expires_at: { $lte: now } });
  }
  throw new Error(`could not claim idempotency key ${claim._id}`);
}

/** The live document of a key, or null (absent or expired). By `_id` alone, expiry compared here: FerretDB scans for any other filter. */
export async function findIdempotencyKey(
  c: KeyCollections,
  id: string,
): Promise<IdempotencyKeyDoc | null> {
  const doc = await c.idempotencyKeys.findOne({ _id: id });
  return doc && doc.expires_at > new Date() ? doc : null;
}

/** Claims in one command (the group commit of starts, store/run-writes.ts); each claim's own outcome, in order. */
export function insertClaims(
  c: KeyCollections,
  claims: IdempotencyKeyDoc[],
): Promise<Outcome<void>[]> {
  return bulkOutcomes(claims.length, () =>
    c.idempotencyKeys.insertMany(claims, { ordered: false }),
  );
}

/** Frees a key whose run was never started, so a retry (perhaps corrected) may use it; only the claimant's own claim goes. */
export async function releaseIdempotencyKey(
  c: KeyCollections,
  id: string,
  runId: string,
): Promise<void> {
  await c.idempotencyKeys.deleteOne({ _id: id, run_id: runId });
}
