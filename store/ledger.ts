/**
 * The append-only ledger and the account balance it moves (D17).
 *
 * MongoDB (and FerretDB) give no multi-document transactions here, yet an entry and the
 * balance must move together exactly once, even when the caller crashes between steps and
 * retries. This is the classic two-phase pattern on single-document atomic updates:
 *   1. insert the entry as `pending` (its `_id` makes it unique: a run's debit is `led_<run ulid>`);
 *   2. `$inc` the balance and `$push` the entry id into `pending_entries`, guarded by
 *      `pending_entries: {$ne: id}` so a retry cannot apply it twice;
 *   3. mark the entry `applied`;
 *   4. `$pull` the id from `pending_entries`.
 * A retry reads the entry first: once it is `applied`, only step 4 can be left to do.
 */
import type { Collections } from './db';
import type { LedgerDoc } from './documents';

export type NewEntry = Omit<LedgerDoc, 'state' | 'created_at'>;

/** Records an entry and applies it to the balance exactly once; safe to call again with the same entry. */
export async function postEntry(c: Pick<Collections, 'ledger' | 'accounts'>, entry: NewEntry): Promise<LedgerDoc> {
  try {
    await c.ledger.insertOne({ ...entry, state: 'pending', created_at: new Date() });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  const stored = await c.ledger.findOne({ _id: entry._id });
  if (!stored) throw new Error(`ledger entry ${entry._id} vanished`);
  if (stored.state === 'pending') {
    await c.accounts.updateOne(
      { _id: stored.account_id, pending_entries: { $ne: stored._id } },
      { $inc: { balance_usd: stored.amount_usd }, $push: { pending_entries: stored._id } },
    );
    await c.ledger.updateOne({ _id: stored._id }, { $set: { state: 'applied' } });
  }
  await c.accounts.updateOne({ _id: stored.account_id }, { $pull: { pending_entries: stored._id } });
  return { ...stored, state: 'applied' };
}

/** The account's entries, oldest first. */
export function listEntries(c: Pick<Collections, 'ledger'>, accountId: string, limit = 100): Promise<LedgerDoc[]> {
  return c.ledger.find({ account_id: accountId }).sort({ _id: 1 }).limit(limit).toArray();
}

/** True for MongoDB's E11000 duplicate key error. */
export function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000;
}
