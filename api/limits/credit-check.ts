/**
 * The D17 start gate: reserves a run's hold (domain/run-hold.ts) before the run exists, so that
 * however many starts race, in however many API processes, the credit held never exceeds the
 * credit available by more than one run's hold.
 *
 * The rule: a start is admitted while the account's available credit (ledger balance minus open
 * holds) is above zero, and its hold is then booked in full. So only the last run admitted can
 * take the available credit below zero, by at most its own hold; every start after it is 402
 * until holds are released (the runs end) or credit is added.
 *
 * How it stays exact without transactions (store/credit-holds.ts): every reservation is an
 * insert of the next entry of the account's hold chain, decided against the entry before it, so
 * the unique `_id` serializes them. What is available is `S - R`: R, the chain's running sum of
 * everything reserved, is exact at the head the insert follows; S, the ledger balance plus every
 * hold given back, only grows (credits, releases, and debits never above their run's hold), so
 * a sum from a few seconds ago is a lower bound and a decision made with it errs on the safe
 * side. Sums are therefore shared and remembered; only a refusal needs a sum begun after the
 * start arrived (so a top-up counts at once). The one thing that makes S shrink is an operator
 * taking credit away (a negative `credits add`): the account counts those removals, and a
 * commit whose remembered sum was taken before the latest one sums again (one `_id` read a
 * commit). A process that remembered the balance before a correction admitted every start after
 * it: $10 taken from $9.999 left one process admitting 100 of 100 starts, to −$0.101.
 *
 * Starts of one account in one process are committed together: those that arrive while an
 * insert is under way wait for the next, one insert for all of them. A rich account also takes
 * a lease: the insert reserves a block beyond the admitted holds (at most 1/16 of what stays
 * available, and room for LEASE_HOLDS runs like the largest admitted), from which this process
 * admits the next starts with no store round trip while each fits entirely; after LEASE_MS the
 * unused rest is given back by a `release` ledger entry. A lease never admits a hold it cannot
 * cover, so it never adds to the one-hold bound.
 */
import { isStoreUnreachable, type Collections } from '../../store/db';
import { creditRemovals } from '../../store/accounts';
import {
  appendHold,
  creditFrom,
  findChainHead,
  type AccountCredit,
  type ChainHead,
} from '../../store/credit-holds';
import { generateId } from '../../store/ids';
import {
  checkpointDue,
  latestCheckpoint,
  postRelease,
  roundUsd,
  sumsFrom,
  writeCheckpoint,
  type Checkpoint,
  type LedgerSums,
} from '../../store/ledger';
import { InsufficientCreditsError } from '../../domain/errors';
import { retrying } from '../../lib/retrying';

/** Accounts whose state a process remembers. */
const MAX_ACCOUNTS = 10_000;
/** How long a lease admits starts before its unused rest is given back. */
export const LEASE_MS = 5_000;
/** A lease leaves room for this many runs like the largest hold of the starts that took it. */
export const LEASE_HOLDS = 64;
/**
 * How long a release that found the store unreachable is tried again, off the request's path: an
 * election or a restart. Dropped, the credit would stay held until the account is quiet for the
 * hourly sweep (store/hold-sweep.ts), which a busy account may never be.
 */
export const RELEASE_RETRY_MS = 10 * 60_000;

type CreditCollections = Pick<
  Collections,
  'ledger' | 'ledgerCheckpoints' | 'creditHolds' | 'accounts'
>;

interface Pending {
  runId: string;
  holdUsd: number;
  /** Admitted only when the available credit covers the whole hold (a `max_cost` run, D36). */
  whole: boolean;
  arrivedAt: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** A release entry to book (store/ledger.ts postRelease). */
type Release = Parameters<typeof postRelease>[1];

interface Lease {
  /** The `release` entry that gives back its unused rest. */
  releaseId: string;
  remaining: number;
  until: number;
}

interface AccountState {
  head?: ChainHead;
  sums?: Sums;
  /** Whether a newer sum could change the next decision (sumCanMatter); false: it is not refreshed. */
  sumMatters?: boolean;
  summing?: Promise<void>;
  queue: Pending[];
  committing: boolean;
  lease?: Lease;
}

/**
 * An account's ledger sums as of `startedAt`, how long the store took to answer them, and the
 * account's count of credit removals read before they were taken (AccountDoc.credit_removals).
 */
type Sums = LedgerSums & { startedAt: number; tookMs: number; removals: number };

/**
 * A remembered sum is refreshed no sooner than this many times the last one took: on the embedded
 * FerretDB a sum scans the whole ledger collection (~0.1–0.6 s at thousands of entries, bench P1
 * and P7), so refreshing every two seconds would spend a tenth of a core on it; on MongoDB a sum
 * takes milliseconds and the time to live decides. An older sum is only a lower bound (see above).
 */
const SUM_COST_SHARE = 40;

/** Per-process gate on an account's credit, built once per API (createApp). */
export class CreditCheck {
  private readonly accounts = new Map<string, AccountState>();
  /** The newest checkpoint known per account (null: it has none); an older one only makes a sum longer, never wrong. */
  private readonly checkpoints = new Map<string, Checkpoint | null>();
  private readonly advancing = new Set<string>();
  private readonly releasing = new Set<Promise<unknown>>();
  /** The process is stopping: a release is tried once, and never again in the background. */
  private closing = false;

  constructor(
    private readonly collections: CreditCollections,
    /** How old a remembered sum may grow before it is refreshed off the start path. */
    private readonly ttlMs = 2_000,
    /** Told once of a release that found the store unreachable and is tried again (the API logs it). */
    private readonly onReleaseRetry: (err: unknown, release: Release) => void = () => undefined,
  ) {}

  /**
   * Reserves `holdUsd` for run `runId` of the account, or throws 402 `insufficient_credits` when
   * its available credit is at or below zero (D17). The caller must give the hold back with
   * `release` if the run then never starts; a started run's end gives it back (store/run-end.ts).
   */
  reserve(accountId: string, runId: string, holdUsd: number, whole = false): Promise<void> {
    const state = this.state(accountId);
    const now = Date.now();
    if (state.queue.length === 0 && this.takeFromLease(state, holdUsd, now)) {
      this.refreshIfOld(accountId, state, now);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      state.queue.push({ runId, holdUsd, whole, arrivedAt: now, resolve, reject });
      if (!state.committing) void this.commitAll(accountId, state);
    });
  }

  /**
   * Gives back the hold of a run that will not start (recorded by another request, refused by
   * Temporal). Settles with the first try; one that found the store unreachable goes on in the
   * background (bookRelease).
   */
  async release(accountId: string, runId: string, holdUsd: number, why: string): Promise<void> {
    if (holdUsd <= 0) return;
    await this.bookRelease({
      id: generateId('led'),
      accountId,
      runId,
      usd: holdUsd,
      note: `hold released: ${why}`,
    });
  }

  /**
   * What the account has, for its own caller to read (D41): the chain's head read now, the ledger's
   * sums shared with the gate and refreshed once older than the gate lets them grow (so reading it
   * in a loop costs the store at most one sum per TTL, and a few `_id` reads). A sum not yet
   * counting a hold given back shows it still held: never more available than there is.
   */
  async credit(accountId: string): Promise<AccountCredit> {
    const state = this.state(accountId);
    const known = state.sums;
    const [sums, head] = await Promise.all([
      known && !this.isOld(known, Date.now()) ? known : this.sum(accountId, state),
      findChainHead(this.collections, accountId, state.head),
    ]);
    return creditFrom(sums, head.reserved_usd);
  }

  /** Gives back every lease's unused rest now (the API is stopping); a release the store does not take stays held. */
  async close(): Promise<void> {
    this.closing = true;
    for (const [accountId, state] of this.accounts) this.endLease(accountId, state);
    await Promise.allSettled([...this.releasing]);
  }

  /** Checkpoint writes and lease releases under way (tests wait for them). */
  get checkpointing(): number {
    return this.advancing.size + this.releasing.size;
  }

  private state(accountId: string): AccountState {
    let state = this.accounts.get(accountId);
    if (!state) {
      if (this.accounts.size >= MAX_ACCOUNTS) this.forgetIdle();
      state = { queue: [], committing: false };
      this.accounts.set(accountId, state);
    }
    return state;
  }

  /** Bounded memory: drops accounts with nothing under way (a miss only costs a sum and a head lookup). */
  private forgetIdle(): void {
    for (const [id, s] of this.accounts) {
      if (!s.committing && s.queue.length === 0 && !s.summing) {
        this.endLease(id, s);
        this.accounts.delete(id);
      }
    }
  }

  private async commitAll(accountId: string, state: AccountState): Promise<void> {
    state.committing = true;
    try {
      while (state.queue.length > 0) {
        const batch = state.queue.splice(0);
        try {
          await this.commit(accountId, state, batch);
        } catch (err) {
          state.head = undefined; // unknown after a failed write: look it up again
          for (const p of batch) p.reject(err as Error);
        }
      }
    } finally {
      state.committing = false;
    }
  }

  /** Admits a hold from the process's lease when it fits entirely (no store round trip). */
  private takeFromLease(state: AccountState, holdUsd: number, now: number): boolean {
    const lease = state.lease;
    if (!lease || lease.until <= now || lease.remaining <= 0 || lease.remaining < holdUsd)
      return false;
    lease.remaining = roundUsd(lease.remaining - holdUsd);
    return true;
  }

  /** Decides `pending` in arrival order: what the lease covers at once, the rest with one chain insert. */
  private async commit(accountId: string, state: AccountState, pending: Pending[]): Promise<void> {
    const now = Date.now();
    const batch: Pending[] = [];
    for (const p of pending) {
      if (batch.length === 0 && this.takeFromLease(state, p.holdUsd, now)) p.resolve();
      else batch.push(p);
    }
    if (batch.length === 0) return;
    this.endLease(accountId, state); // what it has left does not fit the next start
    // A remembered sum taken before credit was taken away is no lower bound any more.
    const known = state.sums;
    let sums =
      known && (await creditRemovals(this.collections, accountId)) === known.removals
        ? known
        : await this.sum(accountId, state, !!known);
    for (;;) {
      const head = (state.head ??= await findChainHead(this.collections, accountId));
      let available = roundUsd(sums.balance + sums.released - head.reserved_usd);
      const admitted: Pending[] = [];
      const refused: Array<Pending & { available: number }> = [];
      for (const p of batch) {
        if (available > 0 && (!p.whole || available >= p.holdUsd)) {
          admitted.push(p);
          available = roundUsd(available - p.holdUsd);
        } else refused.push({ ...p, available });
      }
      // Refuse only on a sum begun after the start arrived: a top-up or a release since counts.
      if (refused.some((p) => p.arrivedAt > sums.startedAt)) {
        sums = await this.sum(accountId, state, true);
        continue;
      }
      const largest = Math.max(0, ...admitted.map((p) => p.holdUsd));
      const lease = largest > 0 ? roundUsd(Math.min(available / 16, LEASE_HOLDS * largest)) : 0;
      const leased = lease >= largest && lease > 0 ? lease : 0;
      const amount = roundUsd(admitted.reduce((sum, p) => sum + p.holdUsd, 0) + leased);
      if (amount > 0) {
        const runs = admitted.map((p) => p.runId);
        const next = await appendHold(this.collections, accountId, head, amount, runs);
        if (!next) {
          // Another reservation took this place: decide again after it.
          state.head = await findChainHead(this.collections, accountId, head);
          continue;
        }
        state.head = next;
        if (leased > 0) {
          const lease = {
            releaseId: generateId('led'),
            remaining: leased,
            until: Date.now() + LEASE_MS,
          };
          state.lease = lease;
          // Ends this lease only: a newer one has its own timer.
          const timer = setTimeout(() => {
            if (state.lease === lease) this.endLease(accountId, state);
          }, LEASE_MS);
          timer.unref();
        }
      }
      state.sumMatters = sumCanMatter(available - leased, largest);
      this.refreshIfOld(accountId, state, Date.now());
      for (const p of admitted) p.resolve();
      // What the admitted holds left (none, unless a whole hold did not fit: then it is refused alone).
      for (const p of refused)
        p.reject(
          p.available > 0
            ? capOverCredit(p.holdUsd, p.available)
            : insufficient(sums, state.head.reserved_usd),
        );
      return;
    }
  }

  /** Closes the account's lease: nothing more is admitted from it, and its unused rest is given back. */
  private endLease(accountId: string, state: AccountState): void {
    const lease = state.lease;
    if (!lease) return;
    state.lease = undefined;
    const rest = lease.remaining;
    lease.remaining = 0;
    if (rest <= 0) return;
    this.bookRelease({
      id: lease.releaseId,
      accountId,
      runId: null,
      usd: rest,
      note: 'unused lease of a process',
    }).catch(() => undefined); // tried again in the background, if that can help
  }

  /**
   * Books a release; the first try's outcome is returned. One that found the store unreachable is
   * tried again in the background, 0.5 s doubling to 5 s apart, for RELEASE_RETRY_MS or until the
   * process stops: its `_id` books it once however often it is sent. What is never booked stays
   * held: the safe side, visible as held in `wrs ledger`.
   */
  private bookRelease(release: Release): Promise<void> {
    const first = postRelease(this.collections, release).then(() => undefined);
    const posting = first
      .catch((err: unknown) => {
        if (!isStoreUnreachable(err) || this.closing) return;
        this.onReleaseRetry(err, release);
        return retrying(() => postRelease(this.collections, release), {
          forMs: RELEASE_RETRY_MS,
          retryable: (again) => isStoreUnreachable(again) && !this.closing,
          firstPauseMs: 500,
          maxPauseMs: 5_000,
        });
      })
      .catch(() => undefined)
      .finally(() => this.releasing.delete(posting));
    this.releasing.add(posting);
    return first;
  }

  /**
   * Starts a new sum off the path once the remembered one is older than the TTL and SUM_COST_SHARE ×
   * its cost, and only while a newer one could change a decision (sumCanMatter).
   */
  private refreshIfOld(accountId: string, state: AccountState, now: number): void {
    const sums = state.sums;
    if (!sums || state.summing || state.sumMatters === false) return;
    if (this.isOld(sums, now)) void this.sum(accountId, state).catch(() => undefined);
  }

  /** Whether a remembered sum is older than the TTL and SUM_COST_SHARE × what it cost. */
  private isOld(sums: Sums, now: number): boolean {
    return now - sums.startedAt > Math.max(this.ttlMs, SUM_COST_SHARE * sums.tookMs);
  }

  /**
   * The account's ledger sums, remembered; concurrent callers share one sum (on FerretDB a sum
   * scans the entries since the newest checkpoint: ~0.6 s at 10,000 entries, bench P7). `fresh`:
   * one begun now, not one already under way.
   */
  private async sum(accountId: string, state: AccountState, fresh = false): Promise<Sums> {
    if (fresh || !state.summing) {
      const startedAt = Date.now();
      const summing = this.sumLedger(accountId).then((sums) => {
        const tookMs = Date.now() - startedAt;
        if (!state.sums || state.sums.startedAt <= startedAt)
          state.sums = { ...sums, startedAt, tookMs };
      });
      const shared = summing.finally(() => {
        if (state.summing === shared) state.summing = undefined;
      });
      state.summing = shared;
      await shared;
    } else await state.summing;
    return state.sums!;
  }

  /** The account's sums, with its count of removals read first (a removal counted there is in the sums). */
  private async sumLedger(accountId: string): Promise<LedgerSums & { removals: number }> {
    const removals = await creditRemovals(this.collections, accountId);
    let checkpoint = this.checkpoints.get(accountId);
    if (checkpoint === undefined) {
      checkpoint = await latestCheckpoint(this.collections, accountId);
      this.remember(accountId, checkpoint);
    }
    if (checkpointDue(checkpoint)) this.advance(accountId, checkpoint);
    return { ...(await sumsFrom(this.collections, accountId, checkpoint)), removals };
  }

  /** Writes the next checkpoint off the request's path; a failure only leaves the sums longer. */
  private advance(accountId: string, from: Checkpoint | null): void {
    if (this.advancing.has(accountId)) return;
    this.advancing.add(accountId);
    writeCheckpoint(this.collections, accountId, from)
      .then((next) => this.remember(accountId, next))
      .catch(() => undefined)
      .finally(() => this.advancing.delete(accountId));
  }

  private remember(accountId: string, checkpoint: Checkpoint | null): void {
    const known = this.checkpoints.get(accountId);
    if (known && (!checkpoint || known.n >= checkpoint.n)) return;
    if (this.checkpoints.size >= MAX_ACCOUNTS) this.checkpoints.clear();
    this.checkpoints.set(accountId, checkpoint);
  }
}

/**
 * Whether a newer sum could change what the next commit decides, given what the remembered one
 * leaves available after it and the largest hold it admitted. A sum only grows (see above), so a
 * newer one can only raise `available`, and a higher `available` changes a decision only once it
 * is what cuts a lease (a lease is the lesser of 1/16 of it and LEASE_HOLDS holds) or what refuses
 * (a refusal always sums anew). A rich account's remembered sum leaves far more than that: it is
 * not refreshed until it leaves less than twice the lease-cutting level, so the refresh comes
 * before the cut. On FerretDB a sum scans the whole ledger (bench P1: 0.07 cores while starts
 * arrive, a third of the store's CPU).
 */
export function sumCanMatter(available: number, largestHold: number): boolean {
  return available <= 2 * 16 * LEASE_HOLDS * largestHold;
}

/** 402 saying what the account has and what runs in flight hold of it. */
const usd = (v: number) => `$${v.toFixed(6).replace(/0{1,4}$/, '')}`;

/**
 * D36: a `max_cost` run holds its cap (the caller's number, up to MAX_COST_USD) and is bounded by
 * it alone, so it starts only when the account's available credit covers it: admitted on any
 * credit above zero, one over a file of 40 rows on an account of $0.02 with `max_cost` 1000 ran
 * every row and left the balance at −$0.061.
 */
function capOverCredit(holdUsd: number, availableUsd: number): InsufficientCreditsError {
  return new InsufficientCreditsError(
    `This run would hold ${usd(holdUsd)} (its max_cost), more than the ${usd(availableUsd)} of credit this account has available. Lower max_cost, or add credits.`,
  );
}

function insufficient(sums: LedgerSums, reservedUsd: number): InsufficientCreditsError {
  const held = creditFrom(sums, reservedUsd).held_usd;
  return new InsufficientCreditsError(
    held > 0
      ? `This account has no credit available: its balance is ${usd(sums.balance)}, and ${usd(held)} of it is held by runs in progress until they end. Add credits or wait for them to finish.`
      : `This account has no credit left (balance ${usd(sums.balance)}). Add credits to start runs.`,
  );
}
