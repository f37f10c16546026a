/**
 * The API process's drain state (docs/deploy.md "Draining"): set once, on SIGTERM. Readiness
 * answers 503 from then on, so load balancers stop sending, and `Prefer: wait` (D28) answers
 * at once instead of holding a request the shutdown would have to cut.
 */
/**
 * Past the drain's delay and grace, how long closing the process's connections (Temporal, MongoDB)
 * may take before api/main.ts gives up and exits 1. The orchestrator's deadline (Compose's
 * `stop_grace_period`, the chart's `terminationGracePeriodSeconds`) must leave room for it.
 */
export const DRAIN_CLOSE_MARGIN_MS = 5_000;

export class Drain {
  private readonly controller = new AbortController();

  /** Aborted when the drain begins. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get draining(): boolean {
    return this.controller.signal.aborted;
  }

  begin(): void {
    if (!this.draining) this.controller.abort(new Error('the API process is shutting down'));
  }
}
