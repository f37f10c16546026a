/**
 * The `settings` collection: shared development secrets (the D19 file URL secret, the development
 * payload key of lib/codec/keys.ts) that the first process creates and every other reads, so the
 * API and any number of workers agree without configuration. Production sets them in config/.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';

/** The development file URL secret's id (D19). */
export const FILE_URL_SECRET_ID = 'file_url_secret';

interface SettingDoc {
  _id: string;
  value: string;
  created_at: Date;
}

/**
 * Reads a shared development secret (32 random bytes, base64url), creating it on first use (the
 * unique `_id` makes one insert win). `id` names it: the file URL secret by default, the
 * development payload key (lib/codec/keys.ts) otherwise.
 */
export async function sharedDevSecret(db: Db, id = FILE_URL_SECRET_ID): Promise<string> {
  const settings = db.collection<SettingDoc>('settings');
  const existing = await settings.findOne({ _id: id });
  if (existing) return existing.value;
  try {
    await settings.insertOne({
      _id: id,
      value: randomBytes(32).toString('base64url'),
      created_at: new Date(),
    });
  } catch (err) {
    if ((err as { code?: unknown }).code !== 11000) throw err; // another process won the race: use its secret
  }
  const stored = await settings.findOne({ _id: id });
  if (!stored) throw new Error(`shared secret ${id} vanished`);
  return stored.value;
}
