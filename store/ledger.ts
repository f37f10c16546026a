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
 *
 * Step 2 is also guarded by the account's `version`, bumped by every balance move: an attempt
 * that read the entry as `pending` and then stalled (Temporal retries an activity whose attempt
 * timed out while that attempt may still be running) must not apply it again after a newer
 * attempt finished all four steps, when the id is no longer in `pending_entries`.
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
  if (stored.state === 'pending' && (await moveBalanceOnce(c, stored))) {
    await c.ledger.updateOne({ _id: stored._id }, { $set: { state: 'applied' } });
  }
  await c.accounts.updateOne({ _id: stored.account_id }, { $pull: { pending_entries: stored._id } });
  return { ...stored, state: 'applied' };
}

/**
 * Step 2, decided by what the documents say rather than by update counts: returns once the
 * entry's amount is in the balance (true) or the entry is already `applied` (false).
 */
async function moveBalanceOnce(c: Pick<Collections, 'ledger' | 'accounts'>, entry: LedgerDoc): Promise<boolean> {
  for (;;) {
    const account = await c.accounts.findOne({ _id: entry.account_id }, { projection: { pending_entries: 1, version: 1 } });
    // No account, no balance to move (as before); throwing would retry a run's finalize forever.
    if (!account) return true;
    if (account.pending_entries?.includes(entry._id)) return true;
    // Read after the account: an attempt that applied the entry and pulled its id marked it applied first.
    const current = await c.ledger.findOne({ _id: entry._id }, { projection: { state: 1 } });
    if (current?.state === 'applied') return false;
    // Matches only if no balance moved since the read above (or accounts from before `version`).
    await c.accounts.updateOne(
      { _id: entry.account_id, version: account.version ?? { $exists: false }, pending_entries: { $ne: entry._id } },
      { $inc: { balance_usd: entry.amount_usd, version: 1 }, $push: { pending_entries: entry._id } },
    );
  }
}

/** The account's entries, oldest first. */
export function listEntries(c: Pick<Collections, 'ledger'>, accountId: string, limit = 100): Promise<LedgerDoc[]> {
  return c.ledger.find({ account_id: accountId }).sort({ _id: 1 }).limit(limit).toArray();
}

/** True for MongoDB's E11000 duplicate key error. */
export function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000;
}
