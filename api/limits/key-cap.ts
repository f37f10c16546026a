/**
 * A per-key cap on answers that last (docs/api.md "Connections", D40): open SSE streams
 * (api/stream/stream-cap.ts) and results-file downloads (api/runs/download-cap.ts). A key holds at
 * most `maxPerKey` of them at once in one API process; one more is refused with the 429 `refuse`
 * makes, before anything starts.
 *
 * The count is per process, in memory: such an answer is a socket of this process, so this process
 * knows exactly when it opens and ends, at no store round trip. A count shared in MongoDB would
 * cost two writes per answer and, for the answers of a process that crashed, would stay counted
 * until some lease expired. The honest bound for a key is therefore the cap times the number of
 * API processes behind the load balancer.
 */

export class KeyCap {
  private readonly open = new Map<string, number>();

  constructor(
    private readonly maxPerKey: number,
    private readonly refuse: (max: number) => Error,
  ) {}

  /** Takes one of `keyId`'s slots, or throws `refuse(max)`; the returned release is idempotent. */
  take(keyId: string): () => void {
    const count = this.open.get(keyId) ?? 0;
    if (count >= this.maxPerKey) throw this.refuse(this.maxPerKey);
    this.open.set(keyId, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(keyId) ?? 1) - 1;
      if (left > 0) this.open.set(keyId, left);
      else this.open.delete(keyId); // no entry outlives a key's last answer
    };
  }

  /** Slots `keyId` holds in this process (tests, metrics). */
  count(keyId: string): number {
    return this.open.get(keyId) ?? 0;
  }
}
