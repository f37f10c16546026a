/**
 * The append-only ledger (D17). The balance of an account is the sum of its entries; nothing
 * else holds money.
 *
 * Why no balance field: without multi-document transactions an entry and a balance field can
 * only move together through a multi-step protocol, and FerretDB v1 (our development database)
 * does not even isolate concurrent updates of one document, so such a field drifts there under
 * load. An insert with a unique `_id` is exact on every MongoDB-compatible server: a run's debit
 * is `led_<run ulid>`, so however often a crashed or retried worker posts it, it exists once.
 */
import type { Collections } from './db';
import type { LedgerDoc } from './documents';

export type NewEntry = Omit<LedgerDoc, 'created_at'>;

/** Records an entry exactly once (its `_id` is its identity): true if this call booked it, false if it was booked already. */
export async function postEntry(c: Pick<Collections, 'ledger'>, entry: NewEntry): Promise<boolean> {
  try {
    await c.ledger.insertOne({ ...entry, created_at: new Date() });
    return true;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    return false;
  }
}

/** The account's balance in USD: the sum of its entries (one indexed aggregation). */
export async function accountBalance(c: Pick<Collections, 'ledger'>, accountId: string): Promise<number> {
  const [row] = await c.ledger
    .aggregate<{ total: number }>([{ $match: { account_id: accountId } }, { $group: { _id: null, total: { $sum: '$amount_usd' } } }])
    .toArray();
  return Math.round((row?.total ?? 0) * 1e9) / 1e9; // float sums drift; show what was booked
}

/** The account's entries, oldest first. */
export function listEntries(c: Pick<Collections, 'ledger'>, accountId: string, limit = 100): Promise<LedgerDoc[]> {
  return c.ledger.find({ account_id: accountId }).sort({ _id: 1 }).limit(limit).toArray();
}

/** True for MongoDB's E11000 duplicate key error. */
export function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000;
}
