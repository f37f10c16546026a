/**
 * The bytes of answers one worker process holds while reading them, bounded in all
 * (WORKER_ANSWER_BUFFER_BYTES). Each answer is capped on its own (lib/net/read-limited.ts,
 * MAX_ANSWER_BYTES), but a tenant whose model or server answers near that cap on every one of its
 * calls in flight (64 per worker) would have the worker hold gigabytes at once. Readers take the
 * budget chunk by chunk as bytes arrive; past it a reader stops reading (the sender waits on TCP's
 * flow control) until others give theirs back, except the oldest reader in flight, which always
 * goes on. So readers never wait on each other in a circle, nothing is refused (a paid answer is
 * never lost to a busy worker), and what the worker holds stays under the budget plus one answer.
 */

/** One answer being read: what it took so far. */
export interface BudgetReader {
  /** Takes `bytes` for a chunk that arrived: at once while they fit (or for the oldest reader), else when they do. */
  take(bytes: number, signal?: AbortSignal): Promise<void>;
  /** Gives back everything the reader took (its answer was handed on, or failed). */
  done(): void;
}

interface Waiter {
  reader: number;
  bytes: number;
  resolve: () => void;
}

export class ReadBudget {
  private used = 0;
  private next = 0;
  /** Readers in flight by age (ids increase): the first is the oldest. */
  private readonly active = new Set<number>();
  private readonly waiting: Waiter[] = [];

  constructor(readonly limitBytes: number) {}

  /** Bytes taken by the readers in flight. */
  get held(): number {
    return this.used;
  }

  reader(): BudgetReader {
    const id = this.next++;
    this.active.add(id);
    let taken = 0;
    let finished = false;
    return {
      take: async (bytes, signal) => {
        if (this.fits(id, bytes)) this.used += bytes;
        else await this.wait(id, bytes, signal); // counted by wake() when it lets the reader go
        taken += bytes;
      },
      done: () => {
        if (finished) return;
        finished = true;
        this.used -= taken;
        this.active.delete(id);
        this.wake();
      },
    };
  }

  private fits(id: number, bytes: number): boolean {
    return this.used + bytes <= this.limitBytes || this.oldest() === id;
  }

  private oldest(): number | undefined {
    return this.active.values().next().value;
  }

  private wait(reader: number, bytes: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        reject(signal!.reason);
      };
      // The listener goes with the wait: a block's signal sees thousands of them.
      const waiter: Waiter = {
        reader,
        bytes,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.waiting.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Lets waiters go, first come first, while they fit (the oldest reader always fits). */
  private wake(): void {
    for (let i = 0; i < this.waiting.length;) {
      const waiter = this.waiting[i];
      if (!this.fits(waiter.reader, waiter.bytes)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      this.used += waiter.bytes; // now, so the next waiter sees it
      waiter.resolve();
    }
  }
}
