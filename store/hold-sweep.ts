/**
 * Gives back credit held for no run (D17). A start reserves its run's hold in the account's chain
 * (store/credit-holds.ts) before the run is recorded, and a busy API process reserves a lease for
 * the starts that follow; the run's end gives a hold back, the process the unused rest of its lease
 * 5 s on. An API process that dies in between leaves that credit reserved with nothing to give it
 * back: the account's available credit stays smaller by it for good.
 *
 * The hourly sweep (activities/retention.ts) finds it once an account has been quiet for `graceMs`
 * (15 min, far past any start's request and any lease): no chain entry and no run ended since.
 * Then everything still held should be held by the account's unfinished runs; what is held beyond
 * their holds is given back by one `release` entry, its `_id` named after the state it was decided
 * on, so sweeps of one state book it once. The three reads are made in the order that makes every
 * race err on the side of holding: the head first (a reservation after it only adds to what runs
 * hold), then the runs (one ending after this read is still counted as holding), then the ledger
 * (a hold given back before this read is counted as given back).
 */
import type { Collections } from './db';
import { findChainHead } from './credit-holds';
import { accountSums, postRelease, roundUsd } from './ledger';

/** How long an account's chain must have been still before its held credit is checked. */
export const HOLD_SWEEP_GRACE_MS = 15 * 60_000;
/** How far back a sweep looks for accounts that became quiet (a sweep missed for hours still finds them). */
export const HOLD_SWEEP_LOOKBACK_MS = 6 * 3_600_000;
/** Less than this is float drift, not a hold (the smallest hold is the start fee). */
const MIN_RELEASE_USD = 0.000001;

type SweepCollections = Pick<Collections, 'creditHolds' | 'ledger' | 'ledgerCheckpoints' | 'runs'>;

export interface SweptHolds {
  /** Accounts whose held credit was checked. */
  accounts: number;
  /** Releases booked, and what they gave back. */
  releases: number;
  releasedUsd: number;
}

/** One sweep over the accounts whose chain went quiet in the lookback before `now − graceMs`. */
export async function sweepHolds(
  c: SweepCollections,
  opts: { now?: number; graceMs?: number; lookbackMs?: number } = {},
): Promise<SweptHolds> {
  const quietSince = (opts.now ?? Date.now()) - (opts.graceMs ?? HOLD_SWEEP_GRACE_MS);
  const from = quietSince - (opts.lookbackMs ?? HOLD_SWEEP_LOOKBACK_MS);
  const accounts = await c.creditHolds.distinct('account_id', {
    created_at: { $gt: new Date(from), $lte: new Date(quietSince) },
  });
  const swept: SweptHolds = { accounts: 0, releases: 0, releasedUsd: 0 };
  for (const accountId of accounts) {
    const released = await sweepAccount(c, accountId, quietSince);
    if (released === undefined) continue;
    swept.accounts++;
    if (released > 0) {
      swept.releases++;
      swept.releasedUsd = roundUsd(swept.releasedUsd + released);
    }
  }
  return swept;
}

/** What one quiet account had held for no run and is now given back (0: nothing); undefined: not quiet. */
async function sweepAccount(
  c: SweepCollections,
  accountId: string,
  quietSince: number,
): Promise<number | undefined> {
  const head = await findChainHead(c, accountId);
  if (!head.created_at || head.created_at.getTime() > quietSince) return undefined;
  // Its unfinished runs, and any run that ended since: an end written while the sweep reads (its
  // debit and record are two writes) must not look given back and still held at once.
  const runs = await c.runs
    .find(
      {
        account_id: accountId,
        $or: [{ finalized: false }, { completed_at: { $gt: new Date(quietSince) } }],
      },
      { projection: { _id: 0, hold_usd: 1, finalized: 1 } },
    )
    .toArray();
  if (runs.some((run) => run.finalized)) return undefined;
  const runsHold = runs.reduce((sum, run) => sum + (run.hold_usd ?? 0), 0);
  const sums = await accountSums(c, accountId);
  const stray = roundUsd(head.reserved_usd - sums.released - runsHold);
  if (stray < MIN_RELEASE_USD) return 0;
  const booked = await postRelease(c, {
    // Named after the state it was decided on: a second sweep of the same state books nothing more.
    id: `led_sweep_${accountId}_${head.n}_${Math.round(sums.released * 1e9)}`,
    accountId,
    runId: null,
    usd: stray,
    note: 'held credit no run holds, given back (an API process stopped while starting runs)',
  });
  return booked ? stray : 0;
}
