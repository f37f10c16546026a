/**
 * The D17 start gate ("a balance at or below zero is 402") without summing the account's whole
 * ledger on every start: a positive balance is remembered for a couple of seconds per process.
 *
 * Why this is safe: the gate never promised exactness, since runs in flight are debited only when
 * they end, so an account can always start a few runs more than its credit covers. Remembering
 * "positive" briefly widens that window a little under bursts. A balance at or below zero is never
 * remembered, so a top-up takes effect on the next start whose sum begins after it (concurrent
 * starts of one account share one sum).
 */
import type { Collections } from '../../store/db';
import { accountBalance } from '../../store/ledger';
import { InsufficientCreditsError } from '../errors';

/** Per-process gate on an account's credit, built once per API (createApp). */
export class CreditCheck {
  private readonly positiveUntil = new Map<string, number>();
  /** Sums under way: concurrent starts of one account share one (32 parallel sums queued for ~0.8 s each in bench P1). */
  private readonly summing = new Map<string, Promise<number>>();

  constructor(
    private readonly collections: Pick<Collections, 'ledger'>,
    private readonly ttlMs = 2_000,
  ) {}

  /** Throws 402 `insufficient_credits` unless the account's balance is above zero (D17). */
  async assertCanStart(accountId: string, nowMs = Date.now()): Promise<void> {
    const until = this.positiveUntil.get(accountId);
    if (until !== undefined && until > nowMs) return;
    const balance = await this.balance(accountId);
    if (balance <= 0) {
      this.positiveUntil.delete(accountId);
      throw new InsufficientCreditsError();
    }
    if (this.positiveUntil.size >= 10_000) this.positiveUntil.clear(); // bounded; a miss only costs one sum
    this.positiveUntil.set(accountId, nowMs + this.ttlMs);
  }

  /** The account's balance, from the sum already under way for it if there is one. */
  private balance(accountId: string): Promise<number> {
    let sum = this.summing.get(accountId);
    if (!sum) {
      sum = accountBalance(this.collections, accountId).finally(() => this.summing.delete(accountId));
      this.summing.set(accountId, sum);
    }
    return sum;
  }
}
