/**
 * Puts every provider call of a node row through the worker's CallScheduler (D36): the row's
 * account comes from its request, its priority from the activity's Temporal priority (the API set
 * it at the run's start and activities inherit it; a block's rows carry it in their request, the
 * block's own key being the neutral one), and the account's cap from the store, read by
 * `_id` at most every few seconds per account so an operator's change applies within that time.
 */
import { Context } from '@temporalio/activity';
import { priorityOfKey } from '../domain/run-priority';
import type { Collections } from '../store/db';
import { accountCap } from '../store/accounts';
import { CallScheduler } from './call-scheduler';
import { governCalls } from './load-governor';
import type { RowExecutors } from './node-chunk';

/** How long an account's cap is trusted before it is read again. */
export const CAP_REFRESH_MS = 5_000;

export interface ProviderCallLimits {
  workerSlots: number;
  accountCap: number;
  /** The worker's event-loop delay the load governor keeps the calls under (activities/load-governor.ts); 0: off. */
  lagTargetMs: number;
  /** The same while two or more accounts have calls in flight or waiting (`lagTargetMs` if not given). */
  sharedLagTargetMs?: number;
  /** D35: blocks of big nodes this worker runs at once (activities/node-block.ts); 8 if not given. */
  workerBlocks?: number;
  /** Bytes of answers this worker holds while reading them (lib/net/read-budget.ts); unbounded if not given. */
  answerBufferBytes?: number;
}

/** The defaults when a worker is built without configuration (unit uses of createActivities). */
export const DEFAULT_PROVIDER_CALLS: ProviderCallLimits = {
  workerSlots: 128,
  accountCap: 64,
  lagTargetMs: 0,
};

/** Accounts' own caps, as last read; a failed read keeps the last one (or the default). */
class AccountCaps {
  private readonly caps = new Map<string, { cap: number | null; at: number }>();
  private readonly loading = new Map<string, Promise<void>>();

  constructor(
    private readonly collections: Pick<Collections, 'accounts'>,
    private readonly fallback: number,
  ) {}

  capOf = (accountId: string): number => this.caps.get(accountId)?.cap ?? this.fallback;

  /** Makes sure the account's cap is at most CAP_REFRESH_MS old; one read at a time per account. */
  async refresh(accountId: string): Promise<void> {
    const known = this.caps.get(accountId);
    if (known && Date.now() - known.at < CAP_REFRESH_MS) return;
    let pending = this.loading.get(accountId);
    if (!pending) {
      pending = accountCap(this.collections, accountId, 'max_provider_calls')
        .then((cap) => void this.caps.set(accountId, { cap, at: Date.now() }))
        .catch(() => void this.caps.set(accountId, { cap: known?.cap ?? null, at: Date.now() }))
        .finally(() => this.loading.delete(accountId));
      this.loading.set(accountId, pending);
      // Accounts seen long ago are forgotten, so the map stays as large as the busy accounts.
      if (this.caps.size > 10_000) this.caps.clear();
    }
    await pending;
  }
}

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined; // outside an activity (unit use): no priority, no cancel
  }
}

/** A scheduler for this worker process and the executors that wait for its slots. */
export function scheduledExecutors(
  executors: RowExecutors,
  collections: Pick<Collections, 'accounts'>,
  limits: ProviderCallLimits,
): { scheduler: CallScheduler; executors: RowExecutors } {
  const caps = new AccountCaps(collections, limits.accountCap);
  const scheduler = new CallScheduler({ slots: limits.workerSlots, capOf: caps.capOf });
  governCalls(scheduler, {
    lagTargetMs: limits.lagTargetMs,
    sharedLagTargetMs: limits.sharedLagTargetMs,
  });
  const wrap =
    <R extends { accountId?: string; priorityKey?: number }, T>(run: (req: R) => Promise<T>) =>
    async (req: R): Promise<T> => {
      // Rows of runs started before accounts were passed share one queue.
      const accountId = req.accountId ?? 'unknown';
      await caps.refresh(accountId);
      const context = activityContext();
      // A block's rows carry the run's key where the block has the neutral one (D36, `blocks-fair`).
      const priority = priorityOfKey(req.priorityKey ?? context?.info.priority?.priorityKey);
      return scheduler.run({ accountId, priority }, () => run(req), context?.cancellationSignal);
    };
  return {
    scheduler,
    executors: {
      llm: wrap(executors.llm),
      http_request: wrap(executors.http_request),
      image_generation: wrap(executors.image_generation),
      model: wrap(executors.model),
    },
  };
}
