import { randomInt } from 'node:crypto';
import { newId, type IdPrefix } from '../domain/ids';

/** A fresh D5 id for Node code (API, CLI, activities), with cryptographic randomness. */
export function generateId(prefix: IdPrefix): string {
  return newId(prefix, Date.now(), () => randomInt(0, 2 ** 32) / 2 ** 32);
}

/** The id of an entity derived one-to-one from another (a run's ledger debit): same ULID, other prefix. */
export function deriveId(prefix: IdPrefix, fromId: string): string {
  return `${prefix}_${fromId.slice(fromId.indexOf('_') + 1)}`;
}
