/**
 * Documents that expire (D16 rate-limit windows, D18 idempotency keys) carry `expires_at`.
 * MongoDB removes them with a TTL index. FerretDB v1 (dev and tests) refuses TTL indexes
 * ("expireAfterSeconds is not implemented yet"), so there a plain index and a periodic sweep
 * do the same job. Readers never rely on the removal: an expired document counts as absent.
 */
import type { Collection } from 'mongodb';
import { deleteAll } from './delete-all';

/** A collection whose documents carry `expires_at` (the driver's generics do not relate collections of different shapes). */
type ExpiringCollection = Collection<any>;

/** How often the fallback sweep runs; expired documents are harmless meanwhile, only space. */
export const SWEEP_INTERVAL_MS = 10 * 60_000;

/** Creates a TTL index on `expires_at` of each collection; false when the server lacks TTL indexes (plain ones are made instead). */
export async function ensureExpiryIndexes(collections: ExpiringCollection[]): Promise<boolean> {
  let ttl = true;
  for (const collection of collections) {
    try {
      await collection.createIndex(
        { expires_at: 1 },
        { expireAfterSeconds: 0, name: 'expires_at_ttl' },
      );
    } catch (err) {
      if (!isNotImplemented(err)) throw err;
      ttl = false;
      await collection.createIndex({ expires_at: 1 }, { name: 'expires_at' });
    }
  }
  return ttl;
}

/**
 * Deletes the expired documents of each collection once, in slices: one FerretDB delete of more
 * than 32,766 documents fails, and a backlog past that (a busy hour's rate windows) failed every
 * sweep after it, the collections growing for good.
 */
export async function sweepExpired(
  collections: ExpiringCollection[],
  now = new Date(),
): Promise<void> {
  await Promise.all(collections.map((c) => deleteAll(c, { expires_at: { $lte: now } })));
}

/** Sweeps every `intervalMs` until the returned function is called; never keeps the process alive. */
export function startSweeper(
  collections: ExpiringCollection[],
  intervalMs = SWEEP_INTERVAL_MS,
): () => void {
  const timer = setInterval(
    () => void sweepExpired(collections).catch(() => undefined),
    intervalMs,
  );
  timer.unref();
  return () => clearInterval(timer);
}

function isNotImplemented(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return e?.code === 238 || (typeof e?.message === 'string' && /not implemented/i.test(e.message));
}
