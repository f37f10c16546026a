/**
 * Group commit: writes from many concurrent callers (runs starting, runs ending) sent as one
 * command per collection, so a store with one writer (FerretDB on SQLite) takes one round trip
 * and one command's fixed cost for a burst instead of one each.
 *
 * The classic scheme, no timer: when nothing is being written, a write goes out at once (after
 * the current microtask, so writes made in the same tick share it); writes that arrive while a
 * batch is in flight wait for it and go out together as the next batch. So a lone caller pays
 * nothing extra, and under load the batch grows with the arrival rate × the store's latency.
 * Batches are bounded (`maxBatch`): a bulk command over thousands of ids is fine on FerretDB,
 * but a bounded one keeps a single command's time, and its failure, bounded too.
 *
 * Every caller's promise settles with its own outcome, and only after the command that carried
 * its write was acknowledged: a write that failed (a duplicate `_id`) fails that caller alone;
 * an error of the whole command (the connection dropped) fails every caller of that batch. No
 * error is swallowed.
 */

/** One write's own result within a batch. */
export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

/** Sends one batch as one command; answers one outcome per item, in order (or throws for them all). */
export type FlushBatch<T, R> = (items: T[]) => Promise<Outcome<R>[]>;

/** The largest batch by default: well inside a command's 16 MB and FerretDB's comfortable bulk size. */
export const DEFAULT_MAX_BATCH = 500;

interface Waiting<T, R> {
  item: T;
  resolve: (value: R) => void;
  reject: (err: unknown) => void;
}

/** Per-process committer of one kind of write (one collection, one command). */
export class GroupCommit<T, R> {
  private queue: Array<Waiting<T, R>> = [];
  private flushing = false;
  private batches = 0;
  private items = 0;

  constructor(
    private readonly flush: FlushBatch<T, R>,
    private readonly maxBatch = DEFAULT_MAX_BATCH,
  ) {
    if (!Number.isInteger(maxBatch) || maxBatch < 1)
      throw new RangeError(`maxBatch must be a positive integer, not ${maxBatch}`);
  }

  /** Queues one write; settles with its own outcome once the batch that carried it was acknowledged. */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        queueMicrotask(() => void this.drain());
      }
    });
  }

  /** Batches sent and writes carried so far (the bench and tests read how well writes group). */
  get stats(): { batches: number; items: number; waiting: number } {
    return { batches: this.batches, items: this.items, waiting: this.queue.length };
  }

  /** Sends batches until nobody waits: each batch is what arrived while the one before was in flight. */
  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        this.batches++;
        this.items += batch.length;
        let outcomes: Outcome<R>[];
        try {
          outcomes = await this.flush(batch.map((w) => w.item));
          if (outcomes.length !== batch.length)
            throw new Error(
              `group commit: ${outcomes.length} outcomes for a batch of ${batch.length}`,
            );
        } catch (err) {
          for (const w of batch) w.reject(err);
          continue;
        }
        batch.forEach((w, i) => {
          const outcome = outcomes[i];
          if (outcome.ok) w.resolve(outcome.value);
          else w.reject(outcome.error);
        });
      }
    } finally {
      this.flushing = false;
    }
  }
}
