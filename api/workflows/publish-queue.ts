/**
 * D26: an account's publishes in this API process, one after another. Concurrent publishes of one
 * slug would race for its next version number (each loser retried, store/workflows.ts) and for the
 * workflow's `stored_bytes`, whose concurrent increments FerretDB 1.x can lose (the quota would
 * then count too little until a recount). Publishing is rare and takes milliseconds: queueing an
 * account's publishes costs nothing worth having, and publishes of other accounts go on at once.
 * API processes are not queued with each other: there, the retry keeps versions whole and
 * `workflows recount-storage` mends a count (docs/architecture.md).
 */
export class PublishQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

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
