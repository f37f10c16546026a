/**
 * An account's hold chain (D17): the one place where credit is reserved for runs, exact on every
 * MongoDB-compatible server without transactions.
 *
 * Entry n (`hold_<account id>_<n>`) carries `reserved_usd`, the sum of everything ever reserved
 * for the account up to it. A reservation is decided against the chain's head n and committed by
 * inserting entry n+1: the unique `_id` lets exactly one decision follow each head, and a loser
 * (duplicate key) reads the winner's entry and decides again. FerretDB 1.x loses concurrent
 * updates of one document and pushes only an exact `{_id}` filter down to SQLite, so the chain
 * is never updated and is read by `_id` alone: the head is found by galloping over ids from a
 * known entry (entries are contiguous: n+1 is written only by someone who read n). So entries
 * are never deleted: without entry 1 a process new to the account would start the chain again.
 *
 * Releases live in the ledger (`released_usd` on a run's debit, or a `release` entry), so the
 * credit held right now is `reserved_usd` of the head minus the ledger's released sum, and the
 * credit available is the ledger balance minus that (store/ledger.ts creditSums).
 */
import type { Collections } from './db';
import type { CreditHoldDoc } from './documents';
import { accountSums, isDuplicateKey, roundUsd, type LedgerSums } from './ledger';
import type { HoldExtension } from '../domain/run';

/** The head of an account's chain: its newest entry's number and running sum (n 0: no entry yet). */
export interface ChainHead {
  n: number;
  reserved_usd: number;
  /** When the entry was written, where it was read from the store (the hold sweep's quiet check). */
  created_at?: Date;
}

export const EMPTY_CHAIN: ChainHead = { n: 0, reserved_usd: 0 };

/** The `_id` of entry `n` of an account's chain. */
export function holdEntryId(accountId: string, n: number): string {
  return `hold_${accountId}_${n}`;
}

type Holds = Pick<Collections, 'creditHolds'>;

/** Entry `n` as a head, or null when it does not exist (yet). */
async function readEntry(c: Holds, accountId: string, n: number): Promise<ChainHead | null> {
  if (n === 0) return EMPTY_CHAIN;
  const doc = await c.creditHolds.findOne(
    { _id: holdEntryId(accountId, n) },
    { projection: { _id: 0, n: 1, reserved_usd: 1, created_at: 1 } },
  );
  return doc ? { n: doc.n, reserved_usd: doc.reserved_usd, created_at: doc.created_at } : null;
}

/**
 * The newest entry at or after `from` (a head known to exist): ids n+1, n+2, n+4 ... until one
 * is missing, then a binary search between the last found and the first missing. O(log k) `_id`
 * reads for k entries written since `from`.
 */
export async function findChainHead(
  c: Holds,
  accountId: string,
  from: ChainHead = EMPTY_CHAIN,
): Promise<ChainHead> {
  let found = from;
  let step = 1;
  let missing: number;
  for (;;) {
    const next = await readEntry(c, accountId, found.n + step);
    if (!next) {
      missing = found.n + step;
      break;
    }
    found = next;
    step *= 2;
  }
  while (missing - found.n > 1) {
    const mid = Math.floor((found.n + missing) / 2);
    const entry = await readEntry(c, accountId, mid);
    if (entry) found = entry;
    else missing = mid;
  }
  return found;
}

/**
 * Commits a reservation of `amountUsd` right after `head`: the new head, or null when another
 * reservation took that place first (decide again from the head findChainHead gives).
 */
export async function appendHold(
  c: Holds,
  accountId: string,
  head: ChainHead,
  amountUsd: number,
  runs: string[],
): Promise<ChainHead | null> {
  const entry: CreditHoldDoc = {
    _id: holdEntryId(accountId, head.n + 1),
    account_id: accountId,
    n: head.n + 1,
    amount_usd: amountUsd,
    reserved_usd: roundUsd(head.reserved_usd + amountUsd),
    runs,
    created_at: new Date(),
  };
  try {
    await c.creditHolds.insertOne(entry);
    return { n: entry.n, reserved_usd: entry.reserved_usd };
  } catch (err) {
    if (isDuplicateKey(err)) return null;
    throw err;
  }
}

/** What an account has (D17): its ledger balance, the part of it held by runs in progress, and the rest. */
export interface AccountCredit {
  balance_usd: number;
  held_usd: number;
  available_usd: number;
}

/** What the ledger's sums and everything the chain reserved leave: held is what was reserved and not yet given back. */
export function creditFrom(sums: LedgerSums, reservedUsd: number): AccountCredit {
  const held = Math.max(0, roundUsd(reservedUsd - sums.released));
  return {
    balance_usd: sums.balance,
    held_usd: held,
    available_usd: roundUsd(sums.balance - held),
  };
}

/** The account's credit now: the ledger's sums and its chain's head (a few reads, for people: the CLI). */
export async function accountCredit(
  c: Pick<Collections, 'ledger' | 'ledgerCheckpoints' | 'creditHolds'>,
  accountId: string,
): Promise<AccountCredit> {
  const [sums, head] = await Promise.all([accountSums(c, accountId), findChainHead(c, accountId)]);
  return creditFrom(sums, head.reserved_usd);
}

/**
 * D17: more hold for a run that outgrew its own (its priced calls counted only while it works):
 * up to `wantUsd`, never more than the account has available, so an extension never takes it
 * below zero. Booked as the chain's next entry, then added to the run record's `hold_usd` (the
 * run's end gives all of it back; the hold sweep counts it as the run's) under the request's
 * number, so a retried request finds it there and books nothing more. Returns what was held (0:
 * nothing available). A request that dies between the two writes leaves its entry held for no run,
 * which the hold sweep gives back once the account is quiet (store/hold-sweep.ts).
 */
export async function extendRunHold(
  c: Pick<Collections, 'creditHolds' | 'ledger' | 'ledgerCheckpoints' | 'runs'>,
  req: HoldExtension,
): Promise<number> {
  const grant = String(req.grant);
  const run = await c.runs.findOne({ _id: req.runId }, { projection: { hold_grants: 1 } });
  const booked = run?.hold_grants?.[grant];
  if (booked !== undefined) return booked;
  const sums = await accountSums(c, req.accountId);
  let head = await findChainHead(c, req.accountId);
  for (;;) {
    const usd = roundUsd(Math.min(req.wantUsd, creditFrom(sums, head.reserved_usd).available_usd));
    if (!(usd > 0)) return 0;
    const next = await appendHold(c, req.accountId, head, usd, [req.runId]);
    if (!next) {
      head = await findChainHead(c, req.accountId, head); // another reservation came first
      continue;
    }
    await c.runs.updateOne(
      { _id: req.runId },
      { $set: { [`hold_grants.${grant}`]: usd }, $inc: { hold_usd: usd } },
    );
    return usd;
  }
}
