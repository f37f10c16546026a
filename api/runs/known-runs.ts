/**
 * Runs this API process has seen and not yet seen finished: their owner and the parts of their
 * record that never change (ids, version, created_at, metadata). With it, a GET of a live run
 * looked at within the last QUIET_MS is answered by the workflow's query alone, no store round
 * trip, and ownership is still checked: an entry comes only from this process's own start (the
 * caller's account) or from the stored record, so it can never name the wrong account. A run this
 * process has not seen is read from the store once (one `_id` lookup), which also tells whether it
 * has finished. Temporal's query answer is never the source of ownership: asking it first would
 * cost a query of a long-closed workflow (a history replay on a worker) for every cold read of a
 * finished run.
 */
import type { RunDoc } from '../../store/documents';
import type { RunViewSource } from '../../domain/run-view';

/** What a read needs of a run record that has not been finalized. */
export type RunSkeleton = Pick<
  RunDoc,
  | '_id'
  | 'account_id'
  | 'published_workflow_id'
  | 'published_workflow_version_id'
  | 'version'
  | 'created_at'
  | 'webhook'
  | 'metadata'
  | 'parent_run_id'
>;

/** Entries held (a few hundred bytes each; the oldest seen go first). */
const MAX_RUNS = 20_000;

/**
 * How long after its last look a run is still taken for live. A run looked at more often (a
 * client polling it) is asked of its workflow alone; one left alone longer has most likely ended
 * meanwhile (most runs end within seconds), and its record answers that with one `_id` read where
 * Temporal would have to be asked first (a describe of the closed workflow), then the record
 * anyway. Either wrong guess costs one round trip; a live run read again is remembered again.
 */
const QUIET_MS = 5_000;

export class KnownRuns {
  private readonly runs = new Map<string, { skeleton: RunSkeleton; lookedAt: number }>();

  constructor(
    private readonly maxRuns = MAX_RUNS,
    private readonly quietMs = QUIET_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The run's skeleton, or undefined when this process has not seen it, has forgotten it, or has
   * not looked at it for QUIET_MS (then the caller reads the record, and remembers it again if the
   * run is still live). A look keeps it live.
   */
  get(runId: string): RunSkeleton | undefined {
    const entry = this.runs.get(runId);
    if (!entry) return undefined;
    const now = this.now();
    if (now - entry.lookedAt > this.quietMs) return undefined;
    entry.lookedAt = now;
    return entry.skeleton;
  }

  /** Records a run not yet finalized (at its start, or on its first read here). */
  remember(run: RunDoc): void {
    if (run.finalized) return;
    this.runs.delete(run._id);
    const skeleton: RunSkeleton = {
      _id: run._id,
      account_id: run.account_id,
      published_workflow_id: run.published_workflow_id,
      published_workflow_version_id: run.published_workflow_version_id,
      version: run.version,
      created_at: run.created_at,
      webhook: run.webhook,
      metadata: run.metadata,
      ...(run.parent_run_id ? { parent_run_id: run.parent_run_id } : {}),
    };
    this.runs.set(run._id, { skeleton, lookedAt: this.now() });
    if (this.runs.size > this.maxRuns) this.runs.delete(this.runs.keys().next().value!);
  }

  /** Forgets a run that has ended: its final record is the answer from now on. */
  forget(runId: string): void {
    this.runs.delete(runId);
  }

  /** Entries held (tests). */
  get size(): number {
    return this.runs.size;
  }
}

/** The record of a run as it stands before its end is written: `pending`, no results. */
export function pendingRecord(skeleton: RunSkeleton): RunViewSource & Pick<RunDoc, 'account_id'> {
  return {
    ...skeleton,
    status: 'pending',
    completed_at: null,
    output: null,
    error: null,
    total_cost: null,
  };
}
