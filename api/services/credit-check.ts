/**
 * The D17 start gate ("a balance at or below zero is 402") without summing the account's whole
 * ledger on every start: a positive balance is remembered for a couple of seconds per process,
 * and a balance is the account's newest ledger checkpoint plus the entries since (store/ledger.ts).
 *
 * Why remembering is safe: the gate never promised exactness, since runs in flight are debited
 * only when they end, so an account can always start a few runs more than its credit covers.
 * Remembering "positive" briefly (and re-summing it off the path for a few seconds after) widens
 * that window a little. A balance at or below zero is never remembered, so a top-up takes effect
 * on the next start whose sum begins after it (concurrent starts of one account share one sum).
 */
import type { Collections } from '../../store/db';
import {
  balanceFrom,
  checkpointDue,
  latestCheckpoint,
  writeCheckpoint,
  type Checkpoint,
} from '../../store/ledger';
import { InsufficientCreditsError } from '../../domain/errors';

/** Accounts whose positive balance or checkpoint a process remembers. */
const MAX_ACCOUNTS = 10_000;

/** How long past its time to live a positive balance still admits starts while it is re-summed off the path. */
export const STALE_LIMIT_MS = 10_000;

/** Per-process gate on an account's credit, built once per API (createApp). */
export class CreditCheck {
  /** Until when each account's positive balance is fresh. */
  private readonly positiveUntil = new Map<string, number>();
  /** Sums under way: concurrent starts of one account share one (32 parallel sums queued for ~0.8 s each in bench P1). */
  private readonly summing = new Map<string, Promise<number>>();
  /** The newest checkpoint known per account (null: it has none); an older one only makes a sum longer, never wrong. */
  private readonly checkpoints = new Map<string, Checkpoint | null>();
  private readonly advancing = new Set<string>();

  constructor(
    private readonly collections: Pick<Collections, 'ledger' | 'ledgerCheckpoints'>,
    private readonly ttlMs = 2_000,
  ) {}

  /**
   * Throws 402 `insufficient_credits` unless the account's balance is above zero (D17). A fresh
   * positive balance admits at once. One gone stale less than STALE_LIMIT_MS ago admits too,
   * while a new sum runs off the request's path (on FerretDB a sum scans the ledger: ~0.6 s
   * at 10,000 entries, bench P7); the first start after that sum sees its answer.
   */
  async assertCanStart(accountId: string, nowMs = Date.now()): Promise<void> {
    const until = this.positiveUntil.get(accountId);
    if (until !== undefined && until > nowMs) return;
    if (until !== undefined && until + STALE_LIMIT_MS > nowMs) {
      void this.balance(accountId, nowMs).catch(() => undefined);
      return;
    }
    await this.balance(accountId, nowMs);
  }

  /** Checkpoint writes under way (tests wait for them). */
  get checkpointing(): number {
    return this.advancing.size;
  }

  /** The account's balance (from the sum already under way for it if there is one), remembered; 402 at or below zero. */
  private async balance(accountId: string, nowMs: number): Promise<void> {
    let sum = this.summing.get(accountId);
    if (!sum) {
      sum = this.sum(accountId).finally(() => this.summing.delete(accountId));
      this.summing.set(accountId, sum);
    }
    const balance = await sum;
    if (balance <= 0) {
      this.positiveUntil.delete(accountId);
      throw new InsufficientCreditsError();
    }
    if (this.positiveUntil.size >= MAX_ACCOUNTS) this.positiveUntil.clear(); // bounded; a miss only costs one sum
    this.positiveUntil.set(accountId, nowMs + this.ttlMs);
  }

  private async sum(accountId: string): Promise<number> {
    let checkpoint = this.checkpoints.get(accountId);
    if (checkpoint === undefined) {
      checkpoint = await latestCheckpoint(this.collections, accountId);
      this.remember(accountId, checkpoint);
    }
    if (checkpointDue(checkpoint)) this.advance(accountId, checkpoint);
    return balanceFrom(this.collections, accountId, checkpoint);
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
