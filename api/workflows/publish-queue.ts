/**
 * D26: an account's publishes in this API process, one after another. Concurrent publishes of one
 * slug would race for its next version number (each loser retried, store/workflows.ts) and for the
 * workflow's `stored_bytes`, whose concurrent increments FerretDB 1.x can lose (the quota would
 * then count too little until a recount). Publishing is rare and takes milliseconds: queueing an
 * account's publishes costs nothing worth having, and publishes of other accounts go on at once.
 * API processes are not queued with each other: there, the retry keeps versions whole and
 * `workflows recount-storage` mends a count (docs/architecture.md). An account has at most
 * PUBLISH_MAX_IN_PROGRESS publishes here at once (admit).
 */
import { RateLimitError } from '../../domain/errors';
import { KeyCap } from '../limits/key-cap';

/** Publishes an account may have in progress in one API process, the one publishing included. */
export const PUBLISH_MAX_IN_PROGRESS = 8;

/** 429 `too_many_publishes`: the account's place in the queue is full (a publish takes milliseconds). */
export class TooManyPublishesError extends RateLimitError {
  constructor(max: number) {
    super(
      `This account already has ${max} publishes in progress in this API process, the most it may have: publish one after another, or retry after a second.`,
      1,
      'too_many_publishes',
    );
  }
}

export class PublishQueue {
  private readonly tails = new Map<string, Promise<unknown>>();
  private readonly places = new KeyCap(
    PUBLISH_MAX_IN_PROGRESS,
    (max) => new TooManyPublishesError(max),
  );

  /**
   * Takes one of the account's places, before its body is read, or throws 429
   * `too_many_publishes`; the returned release is idempotent. Every publish waiting here holds its
   * parsed body (up to 1 MiB of JSON, several times that in memory): unbounded, one key's burst of
   * 250 publishes within its request allowance ran the API out of heap.
   */
  admit(accountId: string): () => void {
    return this.places.take(accountId);
  }

  /** Runs `task` once the account's publishes before it have ended (however they ended). */
  run<T>(accountId: string, task: () => Promise<T>): Promise<T> {
    const before = this.tails.get(accountId) ?? Promise.resolve();
    const result = before.then(task, task);
    const tail = result.catch(() => undefined);
    this.tails.set(accountId, tail);
    void tail.then(() => {
      if (this.tails.get(accountId) === tail) this.tails.delete(accountId);
    });
    return result;
  }
}
