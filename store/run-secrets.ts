/**
 * D39: the per-run payload secret (lib/codec/run-keys.ts) lives on the run record, written with it
 * at start and removed with it, so deleting the record destroys the only means to open the run's
 * Temporal payloads. Looked up by `_id` alone.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import type { StoredRunDoc } from './documents';

/** A new run's secret: 32 random bytes, base64. */
export function newPayloadSecret(): string {
  return randomBytes(32).toString('base64');
}

/** The run's secret; `undefined` for a run recorded without one (before D39), null when there is no such run. */
export async function runPayloadSecret(db: Db, runId: string): Promise<Buffer | null | undefined> {
  const doc = await db
    .collection<StoredRunDoc>('runs')
    .findOne({ _id: runId }, { projection: { payload_secret: 1 } });
  if (!doc) return null;
  return doc.payload_secret ? Buffer.from(doc.payload_secret, 'base64') : undefined;
}
