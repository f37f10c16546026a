/**
 * A big node's row retried inside its block (D35, docs/workflow-format.md "Providers"): a row
 * whose call fails transiently (408, 429, 5xx, a dropped connection: whatever the node's retry
 * policy retries) waits and is called again in place, the other rows of the block running on,
 * until the row has made the policy's `maximumAttempts` (NODE_MAX_ATTEMPTS) calls. Before, any
 * row's transient error failed the whole block attempt, so the rows of a block (up to 1,000)
 * shared Temporal's five attempts: five rows that each failed once failed the node, and a
 * provider's occasional 429 would fail most blocks.
 *
 * The policy is the block's own Temporal retry policy, as the activity's info carries it (the
 * run's settings, which travel with the run): the same backoff (initial interval, coefficient,
 * maximum interval) and the same non-retryable types as the retries of a small run's chunk. A
 * provider's `Retry-After` is waited for when longer than the backoff, up to
 * ROW_RETRY_AFTER_MAX_MS. A store that cannot be reached still stops the block's attempt, whose
 * retry waits for it. The calls are those D36 counts per row (RowCalls), kept in the block's
 * checkpoint, so a row's attempts are counted across Temporal's retries of the block (a worker
 * died) too; an attempt that failed before sending anything counts here alone.
 */
import { ApplicationFailure, type Context } from '@temporalio/activity';
import { setTimeout as sleep } from 'node:timers/promises';
import { isStoreUnreachable } from '../store/db';
import { askedWaitMs, remadeFailure } from './failures';
import type { RowCalls } from './node-chunk';

type RetryPolicy = NonNullable<Context['info']['retryPolicy']>;

/**
 * The longest `Retry-After` a row waits for: a provider asking for more gets its call sooner
 * (the row still gives up after its attempts), so a block attempt is not held for minutes.
 */
export const ROW_RETRY_AFTER_MAX_MS = 60_000;

/** The shortest wait a provider's `Retry-After` sets for a chunk's next attempt when its policy is not known. */
const ASKED_FLOOR_MS = 1_000;

/** What comes after a row's failed attempt: a wait before the next, or the failure that stops the block's attempt. */
export type RowNext = { waitMs: number } | { stop: unknown };

export class RowRetries {
  /** Attempts of rows that failed before sending a call (RowCalls counts the others). */
  private readonly unsent = new Map<number, number>();

  /** Without a policy (a server that sends none), every failure stops the block's attempt, as before. */
  constructor(
    private readonly policy: RetryPolicy | undefined,
    private readonly calls: RowCalls,
  ) {}

  /**
   * After an attempt of row `index` failed with `err` (having sent its call or not): the wait
   * before its next attempt; or what stops the block's attempt: a non-transient error as it is,
   * the error of a row that used its attempts as a non-retryable "gave up after N attempt(s)"
   * (the node fails with it as with a small run's retries used up).
   */
  after(index: number, err: unknown, sent: boolean): RowNext {
    const policy = this.policy;
    // A store that cannot be reached is no failure of the row: the block's next attempt waits it
    // out (activities/store-wait.ts) without spending the row's attempts.
    if (!policy || !transient(err, policy) || isStoreUnreachable(err)) return { stop: err };
    if (!sent) this.unsent.set(index, (this.unsent.get(index) ?? 0) + 1);
    const used = this.calls.of(index) + (this.unsent.get(index) ?? 0);
    const most = policy.maximumAttempts ?? 0; // 0: Temporal's "unlimited"
    if (most > 0 && used >= most) return { stop: gaveUp(err, used) };
    return { waitMs: rowWaitMs(policy, used, askedWaitMs(err)) };
  }
}

/**
 * The wait after a row's `used`-th failed attempt: the policy's backoff (initial interval times
 * the coefficient to the attempts before, up to its maximum interval: Temporal's defaults where
 * it sets none), or what the provider asked for (`Retry-After`) if longer, up to ROW_RETRY_AFTER_MAX_MS.
 */
export function rowWaitMs(policy: RetryPolicy, used: number, askedMs?: number): number {
  const initial = ms(policy.initialInterval) ?? 1_000;
  const coefficient = policy.backoffCoefficient ?? 2;
  const longest = ms(policy.maximumInterval) ?? 100 * initial;
  const backoff = Math.min(longest, initial * coefficient ** Math.max(0, used - 1));
  return Math.max(backoff, Math.min(askedMs ?? 0, ROW_RETRY_AFTER_MAX_MS));
}

/**
 * A small run's chunk (activities/node-chunk.ts) that failed for a provider's transient answer is
 * retried by Temporal, whose backoff does not read the answer: when the provider asked for a
 * longer wait (`Retry-After`), the failure asks Temporal for it (`nextRetryDelay`), as a big
 * node's row waits for it in its block, up to ROW_RETRY_AFTER_MAX_MS.
 */
export function withAskedDelay(err: unknown, info: Context['info']): unknown {
  const asked = askedWaitMs(err);
  if (asked === undefined || !(err instanceof ApplicationFailure)) return err;
  if (err.nonRetryable || err.nextRetryDelay !== undefined) return err;
  // An activity dispatched with its workflow task (eagerly) is told no policy: then the wait is
  // what the provider asked for, at least ASKED_FLOOR_MS (a `Retry-After: 0` is no hot loop).
  const policy = info.retryPolicy;
  const waitMs = policy
    ? rowWaitMs(policy, info.attempt, asked)
    : Math.max(ASKED_FLOOR_MS, Math.min(asked, ROW_RETRY_AFTER_MAX_MS));
  return remadeFailure(err, { nextRetryDelay: waitMs });
}

/**
 * Waits `waitMs`, or less if `halt` aborts first (the block's cancel, or another row's failure
 * that stops the attempt): answers whether the whole wait passed.
 */
export async function pause(waitMs: number, halt: AbortSignal): Promise<boolean> {
  try {
    await sleep(waitMs, undefined, { signal: halt });
    return true;
  } catch (err) {
    if (halt.aborted) return false;
    throw err;
  }
}

/** Whether Temporal would retry `err` under `policy` (a retryable failure of a type it does not exclude). */
function transient(err: unknown, policy: RetryPolicy): boolean {
  if (err instanceof ApplicationFailure && err.nonRetryable) return false;
  const type = err instanceof ApplicationFailure ? err.type : err instanceof Error ? err.name : '';
  return !(type && policy.nonRetryableErrorTypes?.includes(type));
}

/** The row's last error, non-retryable, saying how many attempts it made (the message a node that gave up shows). */
function gaveUp(err: unknown, attempts: number): ApplicationFailure {
  const message = err instanceof Error ? err.message : String(err);
  return remadeFailure(err, {
    message: `gave up after ${attempts} attempt(s): ${message}`,
    nonRetryable: true,
  });
}

/** A policy's interval in ms: the activity's info carries numbers (a string is not expected there). */
function ms(interval: RetryPolicy['initialInterval']): number | undefined {
  return typeof interval === 'number' && Number.isFinite(interval) && interval > 0
    ? interval
    : undefined;
}
