/**
 * A FIFO counting semaphore built on promises only, so it is deterministic inside the workflow
 * sandbox. A task may take several slots at once: a chunk of rows that runs 16 provider calls in
 * parallel inside one activity holds 16 of the run's slots (the per-run bound counts calls, not
 * activities). FIFO order with whole grants means a large request is never starved by small ones.
 */
export class Semaphore {
  private available: number;
  private readonly waiters: Array<{ slots: number; grant: () => void }> = [];

  constructor(readonly size: number) {
    this.available = Math.max(1, size);
  }

  /** Runs `task` once `slots` slots (at most the semaphore's size) are free, and frees them when it settles. */
  async with<T>(task: () => Promise<T>, slots = 1): Promise<T> {
    const wanted = Math.min(Math.max(1, slots), Math.max(1, this.size));
    if (this.waiters.length === 0 && this.available >= wanted) this.available -= wanted;
    else await new Promise<void>((grant) => this.waiters.push({ slots: wanted, grant }));
    try {
      return await task();
    } finally {
      this.available += wanted;
      this.grantWaiting();
    }
  }

  private grantWaiting(): void {
    while (this.waiters.length > 0 && this.waiters[0].slots <= this.available) {
      const next = this.waiters.shift()!;
      this.available -= next.slots;
      next.grant();
    }
  }
}
