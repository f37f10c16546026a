/**
 * The worker process's provider-call scheduler (D36): every provider call of a node row waits here
 * for a slot. The process has `slots` calls in flight at most, shared round-robin between the
 * accounts that are waiting, so one account's big batches cannot take every call (and with them
 * the worker's CPU) from another account's small run. Inside one account the waiting calls are
 * taken by run priority (`high` before `normal` before `low`), then in arrival order. An account
 * never has more than its cap in flight (the operator's default, or the account's own, D36).
 *
 * Waiting never holds an activity's heartbeat: the chunk and block activities heartbeat from a
 * timer, so a cancel reaches a waiting call, which leaves the queue at once (its signal aborts).
 */

import type { RunPriority } from '../domain/run-priority';

/** The three D36 priorities, best first; an index into each account's queues. */
const PRIORITIES: readonly RunPriority[] = ['high', 'normal', 'low'];

/** Who is asking for a slot. */
export interface CallOwner {
  accountId: string;
  priority: RunPriority;
}

interface Waiter {
  grant: () => void;
}

interface AccountQueue {
  /** One FIFO per priority, in PRIORITIES order. */
  waiting: Waiter[][];
  active: number;
}

export interface CallSchedulerOptions {
  /** Provider calls this process has in flight at most, all accounts together. */
  slots: number;
  /** An account's calls in flight at most (its own cap, or the operator's default). */
  capOf: (accountId: string) => number;
}

export class CallScheduler {
  private readonly accounts = new Map<string, AccountQueue>();
  /** Accounts in the order the round-robin visits them; the one at `turn` (modulo their number) goes next, so an account that just joined at the end comes before those just served. */
  private readonly ring: string[] = [];
  private turn = 0;
  private inFlight = 0;
  private readonly aborts = new WeakMap<AbortSignal, Set<() => void>>();
  /** Slots handed out at most now: `slots`, or fewer while the process is overloaded (setLimit). */
  private limit: number;

  constructor(private readonly opts: CallSchedulerOptions) {
    this.limit = opts.slots;
  }

  /** The slots handed out at most now (between 1 and `slots`): lowered while the worker is overloaded. */
  get currentLimit(): number {
    return this.limit;
  }

  setLimit(limit: number): void {
    this.limit = Math.max(1, Math.min(this.opts.slots, Math.round(limit)));
    this.dispatch();
  }

  /** Accounts with calls in flight or waiting now: more than one, and the worker is shared (activities/load-governor.ts). */
  get busyAccounts(): number {
    return this.ring.length;
  }

  /** Calls in flight now: all, or one account's. */
  active(accountId?: string): number {
    if (accountId === undefined) return this.inFlight;
    return this.accounts.get(accountId)?.active ?? 0;
  }

  /** Calls waiting for a slot now: all, or one account's. */
  waiting(accountId?: string): number {
    const count = (q: AccountQueue) => q.waiting.reduce((n, list) => n + list.length, 0);
    if (accountId !== undefined) {
      const q = this.accounts.get(accountId);
      return q ? count(q) : 0;
    }
    let n = 0;
    for (const q of this.accounts.values()) n += count(q);
    return n;
  }

  /** Runs `work` in a slot of the owner's account; a signal that aborts while waiting rejects with its reason. */
  async run<T>(owner: CallOwner, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(owner, signal);
    try {
      return await work();
    } finally {
      this.release(owner.accountId);
    }
  }

  private acquire(owner: CallOwner, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const queue = this.queueOf(owner.accountId);
    const rank = Math.max(0, PRIORITIES.indexOf(owner.priority));
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const list = queue.waiting[rank];
        const at = list.indexOf(waiter);
        if (at >= 0) list.splice(at, 1);
        this.forget(owner.accountId);
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        grant: () => {
          if (signal) this.aborts.get(signal)?.delete(onAbort);
          resolve();
        },
      };
      if (signal) this.onAbort(signal, onAbort);
      queue.waiting[rank].push(waiter);
      this.dispatch();
    });
  }

  /**
   * One listener per signal for all its waiters: a block's lanes (up to 64) wait on the same
   * activity signal, and a listener each would pass Node's listener warning.
   */
  private onAbort(signal: AbortSignal, handler: () => void): void {
    let handlers = this.aborts.get(signal);
    if (!handlers) {
      const set = new Set<() => void>();
      handlers = set;
      this.aborts.set(signal, set);
      signal.addEventListener(
        'abort',
        () => {
          for (const h of set) h();
          set.clear();
        },
        { once: true },
      );
    }
    handlers.add(handler);
  }

  private release(accountId: string): void {
    const queue = this.accounts.get(accountId);
    if (queue) queue.active--;
    this.inFlight--;
    this.forget(accountId);
    this.dispatch();
  }

  /** Hands free slots out, one account at a time in ring order, skipping accounts at their cap. */
  private dispatch(): void {
    while (this.inFlight < this.limit && this.ring.length > 0) {
      let granted = false;
      for (let step = 0; step < this.ring.length; step++) {
        const at = (this.turn + step) % this.ring.length;
        const accountId = this.ring[at];
        const queue = this.accounts.get(accountId)!;
        if (queue.active >= Math.max(1, this.opts.capOf(accountId))) continue;
        const waiter = queue.waiting.find((list) => list.length > 0)?.shift();
        if (!waiter) continue;
        queue.active++;
        this.inFlight++;
        // The next turn starts after this account: the others go before it gets another slot.
        this.turn = at + 1;
        granted = true;
        waiter.grant();
        break;
      }
      if (!granted) return;
    }
  }

  private queueOf(accountId: string): AccountQueue {
    let queue = this.accounts.get(accountId);
    if (!queue) {
      queue = { waiting: PRIORITIES.map(() => []), active: 0 };
      this.accounts.set(accountId, queue);
      this.ring.push(accountId);
    }
    return queue;
  }

  /** Drops an account that has nothing in flight or waiting, so the ring stays as long as the busy accounts. */
  private forget(accountId: string): void {
    const queue = this.accounts.get(accountId);
    if (!queue || queue.active > 0 || queue.waiting.some((list) => list.length > 0)) return;
    this.accounts.delete(accountId);
    const at = this.ring.indexOf(accountId);
    if (at < 0) return;
    this.ring.splice(at, 1);
    if (at < this.turn) this.turn--;
  }
}
