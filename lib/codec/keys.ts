/**
 * Where a process gets its payload keys (D32): PAYLOAD_KEYS when configured (required in
 * production); otherwise, for `npm start` and tests, one random development key per database,
 * created by the first process and read by every other (like the file URL secret), so the
 * embedded stack always encrypts and the API, the workers and the codec server agree.
 */
import type { Db } from 'mongodb';
import type { Config } from '../../config';
import { sharedDevSecret } from '../../store/settings';
import { keyRing, type KeyRing } from './payload-codec';

/** Key id of the development key in payload metadata. */
export const DEV_KEY_ID = 'dev';
const DEV_KEY_SETTING = 'payload_key_dev';

/** The key ring of this configuration: the configured keys, or the database's development key. */
export async function loadKeyRing(config: Pick<Config, 'codec'>, db: Db): Promise<KeyRing> {
  if (config.codec.keys.length > 0) return keyRing(config.codec.keys);
  const secret = await sharedDevSecret(db, DEV_KEY_SETTING);
  return keyRing([{ id: DEV_KEY_ID, key: Buffer.from(secret, 'base64url') }]);
}
