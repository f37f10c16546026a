/**
 * The append-only ledger (D17). The balance of an account is the sum of its entries; nothing
 * else holds money.
 *
 * Why no balance field: without multi-document transactions an entry and a balance field can
 * only move together through a multi-step protocol, and FerretDB v1 (our development database)
 * does not even isolate concurrent updates of one document, so such a field drifts there under
 * load. An insert with a unique `_id` is exact on every MongoDB-compatible server: a run's debit
 * is `led_<run ulid>`, so however often a crashed or retried worker posts it, it exists once.
 *
 * Holds (D17, store/credit-holds.ts) are reserved outside the ledger and given back in it: a run's
 * debit carries `released_usd`, the hold it ends, and a hold whose run never started is given
 * back by a `release` entry of amount 0. So every sum here has two parts: the balance (money) and
 * the released total (holds given back).
 */
import { bulkOutcomes } from './bulk-outcomes';
import type { Collections } from './db';
import type { LedgerCheckpointDoc, LedgerDoc } from './documents';
import type { Outcome } from './group-commit';

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

/**
 * Inserts entries in one command (the group commit of debits, store/run-writes.ts); each entry's
 * own outcome, in order: one booked already (code 11000) fails alone. `created_at` is taken here,
 * just before the insert, as postEntry does (the checkpoints below rely on it).
 */
export function insertEntries(
  c: Pick<Collections, 'ledger'>,
  entries: NewEntry[],
): Promise<Outcome<void>[]> {
  const createdAt = new Date();
  return bulkOutcomes(entries.length, () =>
    c.ledger.insertMany(
      entries.map((entry) => ({ ...entry, created_at: createdAt })),
      { ordered: false },
    ),
  );
}

/**
 * Checkpoints keep a balance from costing a sum of the whole ledger. Checkpoint n holds the sum
 * of the account's entries created before its `up_to`; a balance is the newest checkpoint plus
 * the entries created since. `up_to` lies CHECKPOINT_LAG_MS in the past when a checkpoint is
 * written, so every entry stamped before it has long been inserted (an entry's `created_at` is
 * taken just before its insert). Checkpoints are inserted under `chk_<account>_<n>` and never
 * updated: of two processes writing checkpoint n one insert wins, and either sum is right.
 * A new one is due once the newest covers less than CHECKPOINT_PERIOD_MS + lag, so a sum covers
 * at most the last ~70 minutes of an account's entries.
 */
export const CHECKPOINT_LAG_MS = 5 * 60_000;
export const CHECKPOINT_PERIOD_MS = 60 * 60_000;

/** Whether the account's ledger is due a newer checkpoint than `newest` (null: it has none). */
export function checkpointDue(newest: Checkpoint | null, nowMs = Date.now()): boolean {
  return !newest || newest.up_to.getTime() < nowMs - CHECKPOINT_LAG_MS - CHECKPOINT_PERIOD_MS;
}

export type Checkpoint = Pick<LedgerCheckpointDoc, 'n' | 'up_to' | 'total_usd' | 'released_usd'>;

/** The account's newest checkpoint, or null. */
export function latestCheckpoint(
  c: Pick<Collections, 'ledgerCheckpoints'>,
  accountId: string,
): Promise<Checkpoint | null> {
  return c.ledgerCheckpoints.findOne(
    { account_id: accountId },
    { sort: { n: -1 }, projection: { _id: 0, n: 1, up_to: 1, total_usd: 1, released_usd: 1 } },
  );
}

/** An account's ledger summed: its balance (money) and the holds its entries gave back (D17). */
export interface LedgerSums {
  balance: number;
  released: number;
}

/** The account's balance from `checkpoint` on (null: from the first entry), counting entries created before `before` only if given. */
export async function balanceFrom(
  c: Pick<Collections, 'ledger'>,
  accountId: string,
  checkpoint: Checkpoint | null,
  before?: Date,
): Promise<number> {
  const total = await sumField(c, entriesSince(accountId, checkpoint, before), 'amount_usd');
  return roundUsd((checkpoint?.total_usd ?? 0) + total);
}

/** balanceFrom with the released total beside it. */
export async function sumsFrom(
  c: Pick<Collections, 'ledger'>,
  accountId: string,
  checkpoint: Checkpoint | null,
  before?: Date,
): Promise<LedgerSums> {
  const match = entriesSince(accountId, checkpoint, before);
  // Two aggregates, not two accumulators in one $group: FerretDB 1.24 computes only the first
  // accumulator of a $group and answers 0 for the others.
  const [total, released] = await Promise.all([
    sumField(c, match, 'amount_usd'),
    sumField(c, match, 'released_usd'),
  ]);
  return {
    balance: roundUsd((checkpoint?.total_usd ?? 0) + total),
    released: roundUsd((checkpoint?.released_usd ?? 0) + released),
  };
}

function entriesSince(accountId: string, checkpoint: Checkpoint | null, before?: Date) {
  const created = {
    ...(checkpoint ? { $gte: checkpoint.up_to } : {}),
    ...(before ? { $lt: before } : {}),
  };
  return Object.keys(created).length > 0
    ? { account_id: accountId, created_at: created }
    : { account_id: accountId };
}

/** The sum of one numeric field over the matched entries (absent counts 0). */
async function sumField(
  c: Pick<Collections, 'ledger'>,
  match: object,
  field: 'amount_usd' | 'released_usd',
): Promise<number> {
  const [row] = await c.ledger
    .aggregate<{ total: number }>([
      { $match: match },
      { $group: { _id: null, total: { $sum: `$${field}` } } },
    ])
    .toArray();
  return row?.total ?? 0;
}

/**
 * Writes the checkpoint after `previous`, covering entries up to CHECKPOINT_LAG_MS ago, and
 * returns the newest checkpoint there is afterwards (another process's if it won the id).
 */
export async function writeCheckpoint(
  c: Pick<Collections, 'ledger' | 'ledgerCheckpoints'>,
  accountId: string,
  previous: Checkpoint | null,
  nowMs = Date.now(),
): Promise<Checkpoint | null> {
  if (!checkpointDue(previous, nowMs)) return previous;
  const upTo = new Date(nowMs - CHECKPOINT_LAG_MS);
  const sums = await sumsFrom(c, accountId, previous, upTo);
  const next: LedgerCheckpointDoc = {
    _id: `chk_${accountId}_${(previous?.n ?? 0) + 1}`,
    account_id: accountId,
    n: (previous?.n ?? 0) + 1,
    up_to: upTo,
    total_usd: sums.balance,
    released_usd: sums.released,
    created_at: new Date(nowMs),
  };
  try {
    await c.ledgerCheckpoints.insertOne(next);
    return next;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    return latestCheckpoint(c, accountId);
  }
}

/** The account's balance in USD: its newest checkpoint plus the entries since (exact; two reads). */
export async function accountBalance(
  c: Pick<Collections, 'ledger' | 'ledgerCheckpoints'>,
  accountId: string,
): Promise<number> {
  return balanceFrom(c, accountId, await latestCheckpoint(c, accountId));
}

/** The account's ledger summed now (exact; two reads). */
export async function accountSums(
  c: Pick<Collections, 'ledger' | 'ledgerCheckpoints'>,
  accountId: string,
): Promise<LedgerSums> {
  return sumsFrom(c, accountId, await latestCheckpoint(c, accountId));
}

/**
 * Gives back a hold that no run's debit will (a start that failed after reserving, a process's
 * unused lease): an entry of amount 0 carrying `released_usd`, booked once under `id`.
 */
export function postRelease(
  c: Pick<Collections, 'ledger'>,
  release: { id: string; accountId: string; runId: string | null; usd: number; note: string },
): Promise<boolean> {
  return postEntry(c, {
    _id: release.id,
    account_id: release.accountId,
    kind: 'release',
    run_id: release.runId,
    amount_usd: 0,
    note: release.note,
    released_usd: release.usd,
  });
}

export function roundUsd(value: number): number {
  return Math.round(value * 1e9) / 1e9; // float sums drift; show what was booked
}

/** The account's entries, oldest first. */
export function listEntries(
  c: Pick<Collections, 'ledger'>,
  accountId: string,
  limit = 100,
): Promise<LedgerDoc[]> {
  // In booking order: most ids are time-ordered (ULIDs), but a debit's is its run's (the run's
  // start) and a swept release's names the state it gives back (store/hold-sweep.ts).
  return c.ledger
    .find({ account_id: accountId })
    .sort({ created_at: 1, _id: 1 })
    .limit(limit)
    .toArray();
}

/** How many entries the account has. */
export function countEntries(c: Pick<Collections, 'ledger'>, accountId: string): Promise<number> {
  return c.ledger.countDocuments({ account_id: accountId });
}

/** True for MongoDB's E11000 duplicate key error. */
export function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000;
}
