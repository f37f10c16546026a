/**
 * D36 `max_cost` inside the workflow (deterministic: plain arithmetic on what activities answered).
 * Before a unit of work (a chunk of rows, a block) starts, it takes the budget of its worst case:
 * calls × the node's per-call budget, which is the start's estimate (domain/run-hold.ts
 * callBudgets) or the most one call of the node has cost so far, whichever is more. Budgets of
 * units in flight stay reserved until their answer replaces them with what they cost. A unit
 * that fits only in part shrinks to what fits; when not one call fits, it waits for the units in
 * flight to settle (takeSettled) and, when still none fits, the cap is reached: no unit starts any
 * more, those in flight finish, and the run fails with CostLimitReached.
 *
 * D17: a run without `max_cost` whose priced calls are counted only while it works (rows from a
 * file, a list an `llm` made) is capped the same way at its hold, which grows from the account's
 * available credit as the run needs it (CreditSource): a unit that does not fit asks for more hold
 * first, and only when the account has none left does the run stop, with CreditLimitReached.
 */

/** The run's next unit of work would pass its `max_cost`. */
export class CostLimitReached extends Error {
  constructor(
    maxUsd: number,
    message = `cost limit reached: the run stopped starting work before passing its max_cost of $${maxUsd}`,
  ) {
    super(message);
    this.name = 'CostLimitReached';
  }
}

/** D17: the run's next unit of work needs more credit than the account has available. */
export class CreditLimitReached extends CostLimitReached {
  constructor(heldUsd: number) {
    const held = Math.round(heldUsd * 1e9) / 1e9;
    super(
      heldUsd,
      `insufficient credits: the account's available credit ran out while the run worked, so it stopped starting work ($${held} held for it); add credit and re-run it`,
    );
    this.name = 'CreditLimitReached';
  }
}

/** D17: where a run capped at its hold finds more credit. */
export interface CreditSource {
  /**
   * Whether the run is bounded by its hold at all: patch `credit-cap`, asked only when a unit does
   * not fit (until then both paths issue the same commands); false for runs started before it.
   */
  bounded: () => boolean;
  /** Holds up to `wantUsd` more for the run from the account's available credit; what it held (0: none left). */
  extend: (wantUsd: number) => Promise<number>;
}

const KEEP = () => undefined;

export class CostCap {
  private reserved = 0;
  /** The cap: `max_cost`, or the run's hold and what was added to it (D17). */
  private cap: number;
  private readonly perCallUsd: Record<string, number>;
  /** D17: a run started before patch `credit-cap` (never bounded by its hold). */
  private unbounded = false;
  /** D17: the extension being asked for; units that found no room meanwhile wait for its answer. */
  private extending?: Promise<number>;
  /** Units whose budget is reserved (a count, as the float sum of their budgets may not return to 0). */
  private holding = 0;
  /** Takes waiting for a unit in flight to give its budget back. */
  private waiting: Array<() => void> = [];
  /** Set once a unit did not fit: nothing starts afterwards, free work included. */
  reached = false;
  private readonly mostPerCall = new Map<string, number>();
  private readonly running = new Set<Promise<unknown>>();

  constructor(
    limits: { maxUsd: number; perCallUsd: Record<string, number> },
    /** What the run has cost so far (start fee and finished work). */
    private readonly spent: () => number,
    /** D17: set for a run capped at its hold (then `maxUsd` is the hold), absent for `max_cost`. */
    private readonly credit?: CreditSource,
  ) {
    this.cap = limits.maxUsd;
    this.perCallUsd = limits.perCallUsd;
  }

  get maxUsd(): number {
    return this.cap;
  }

  /** Why the run stops starting work: its `max_cost`, or the account's credit (D17). */
  limitReached(): CostLimitReached {
    return this.credit ? new CreditLimitReached(this.cap) : new CostLimitReached(this.cap);
  }

  /** The budget of one call of the node now. */
  perCall(nodeId: string): number {
    return Math.max(this.perCallUsd[nodeId] ?? 0, this.mostPerCall.get(nodeId) ?? 0);
  }

  /**
   * Reserves the budget of up to `calls` calls of the node and says how many fit (at least 1), or
   * throws CostLimitReached when none does. `release` gives the reservation back once the unit's
   * cost is counted.
   */
  take(nodeId: string, calls: number): { calls: number; release: () => void } {
    if (this.reached) throw this.limitReached();
    const each = this.perCall(nodeId);
    if (each <= 0) return { calls, release: KEEP };
    const fit = this.fit(each, calls);
    if (fit < 1) {
      this.reached = true;
      throw this.limitReached();
    }
    return this.reserve(fit, each);
  }

  /** Reserves the budget of `calls` calls of `each` until `release`. */
  private reserve(calls: number, each: number): { calls: number; release: () => void } {
    const amount = calls * each;
    this.reserved += amount;
    this.holding += 1;
    let released = false;
    return {
      calls,
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
    if (this.credit) return this.takeCredited(nodeId, calls, this.credit);
    for (;;) {
      const each = this.perCall(nodeId);
      const full = !this.reached && each > 0 && this.fit(each, calls) < 1;
      if (!full || this.holding === 0 || !mayWait()) return this.take(nodeId, calls);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /**
   * D17, a run capped at its hold: a unit that fits is taken whole (as a run without a cap would
   * take it); one that does not asks for more hold, twice what it holds or what the unit lacks if
   * more, from the account's available credit. With none left it shrinks to what fits, else waits
   * for the units in flight, and with nothing in flight the credit limit is reached.
   */
  private async takeCredited(
    nodeId: string,
    calls: number,
    credit: CreditSource,
  ): Promise<{ calls: number; release: () => void }> {
    for (;;) {
      if (this.reached) throw this.limitReached();
      const each = this.perCall(nodeId);
      if (each <= 0 || this.unbounded) return { calls, release: KEEP };
      if (this.fit(each, calls) >= calls) return this.reserve(calls, each);
      if (!credit.bounded()) {
        this.unbounded = true; // started before the patch: it never had a bound
        return { calls, release: KEEP };
      }
      if (await this.extend(credit, Math.max(calls * each - this.room(), this.cap))) continue;
      const fit = this.fit(each, calls);
      if (fit >= 1) return this.reserve(fit, each);
      if (this.holding === 0) {
        this.reached = true;
        throw this.limitReached();
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /** One extension at a time: units that find one under way take its answer instead of asking again. */
  private extend(credit: CreditSource, wantUsd: number): Promise<number> {
    this.extending ??= credit
      .extend(wantUsd)
      .then((granted) => {
        this.cap += granted;
        return granted;
      })
      .finally(() => {
        this.extending = undefined;
      });
    return this.extending;
  }

  /** What is left of the cap. */
  private room(): number {
    return this.cap - this.spent() - this.reserved;
  }

  /** How many calls of `each` fit in what is left of the cap. */
  private fit(each: number, calls: number): number {
    // A hair of tolerance: budgets are sums of floats.
    return Math.min(calls, Math.floor(this.room() / each + 1e-9));
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
