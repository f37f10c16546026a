/**
 * D36 `max_cost` inside the workflow (deterministic: plain arithmetic on what activities answered).
 * Before a unit of work (a chunk of rows, a block) starts, it takes the budget of its worst case:
 * calls × the node's per-call budget, which is the start's estimate (domain/run-hold.ts
 * callBudgets) or the most one call of the node has cost so far, whichever is more. Budgets of
 * units in flight stay reserved until their answer replaces them with what they cost. A unit
 * that fits only in part shrinks to what fits; when not one call fits, it waits for the units in
 * flight to settle (takeSettled) and, when still none fits, the cap is reached: no unit starts any
 * more, those in flight finish, and the run fails with CostLimitReached.
 */

/** The run's next unit of work would pass its `max_cost`. */
export class CostLimitReached extends Error {
  constructor(readonly maxUsd: number) {
    super(
      `cost limit reached: the run stopped starting work before passing its max_cost of $${maxUsd}`,
    );
    this.name = 'CostLimitReached';
  }
}

export class CostCap {
  private reserved = 0;
  /** Units whose budget is reserved (a count, as the float sum of their budgets may not return to 0). */
  private holding = 0;
  /** Takes waiting for a unit in flight to give its budget back. */
  private waiting: Array<() => void> = [];
  /** Set once a unit did not fit: nothing starts afterwards, free work included. */
  reached = false;
  private readonly mostPerCall = new Map<string, number>();
  private readonly running = new Set<Promise<unknown>>();

  constructor(
    private readonly cap: { maxUsd: number; perCallUsd: Record<string, number> },
    /** What the run has cost so far (start fee and finished work). */
    private readonly spent: () => number,
  ) {}

  get maxUsd(): number {
    return this.cap.maxUsd;
  }

  /** The budget of one call of the node now. */
  perCall(nodeId: string): number {
    return Math.max(this.cap.perCallUsd[nodeId] ?? 0, this.mostPerCall.get(nodeId) ?? 0);
  }

  /**
   * Reserves the budget of up to `calls` calls of the node and says how many fit (at least 1), or
   * throws CostLimitReached when none does. `release` gives the reservation back once the unit's
   * cost is counted.
   */
  take(nodeId: string, calls: number): { calls: number; release: () => void } {
    if (this.reached) throw new CostLimitReached(this.cap.maxUsd);
    const each = this.perCall(nodeId);
    if (each <= 0) return { calls, release: () => undefined };
    const fit = this.fit(each, calls);
    if (fit < 1) {
      this.reached = true;
      throw new CostLimitReached(this.cap.maxUsd);
    }
    const amount = fit * each;
    this.reserved += amount;
    this.holding += 1;
    let released = false;
    return {
      calls: fit,
      release: () => {
        if (released) return;
        released = true;
        this.reserved -= amount;
        this.holding -= 1;
        for (const wake of this.waiting.splice(0)) wake();
      },
    };
  }

  /**
   * take, except that while units in flight hold budgets that leave no room for one call, it
   * waits for them to give their budgets back (a call's budget is its worst case, what it cost is
   * often far less) and asks again, when `mayWait()` says so (a patch, for runs started before).
   * The cap is then reached only when nothing in flight could leave room.
   */
  async takeSettled(
    nodeId: string,
    calls: number,
    mayWait: () => boolean,
  ): Promise<{ calls: number; release: () => void }> {
    for (;;) {
      const each = this.perCall(nodeId);
      const full = !this.reached && each > 0 && this.fit(each, calls) < 1;
      if (!full || this.holding === 0 || !mayWait()) return this.take(nodeId, calls);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /** How many calls of `each` fit in what is left of the cap. */
  private fit(each: number, calls: number): number {
    const room = this.cap.maxUsd - this.spent() - this.reserved;
    // A hair of tolerance: budgets are sums of floats.
    return Math.min(calls, Math.floor(room / each + 1e-9));
  }

  /** What a finished unit's calls cost: a call dearer than the budget raises the node's budget. */
  observe(nodeId: string, calls: number, costUsd: number): void {
    if (calls <= 0 || costUsd <= 0) return;
    const each = costUsd / calls;
    if (each > (this.mostPerCall.get(nodeId) ?? 0)) this.mostPerCall.set(nodeId, each);
  }

  /** Tracks a unit in flight, so the run can let it finish once the cap is reached. */
  track<T>(unit: Promise<T>): Promise<T> {
    this.running.add(unit);
    const forget = () => this.running.delete(unit);
    unit.then(forget, forget);
    return unit;
  }

  /** Waits until every unit in flight has settled (and was counted). */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
