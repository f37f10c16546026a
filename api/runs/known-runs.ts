/**
 * Runs this API process has seen and not yet seen finished: their owner and the parts of their
 * record that never change (ids, version, created_at, metadata). With it, a GET of a live run is answered
 * by the workflow's query alone, no store round trip, and ownership is still checked: an entry
 * comes only from this process's own start (the caller's account) or from the stored record, so
 * it can never name the wrong account. A run this process has not seen is read from the store
 * once (one `_id` lookup), which also tells whether it has finished. Temporal's query answer is
 * never the source of ownership: asking it first would cost a query of a long-closed workflow
 * (a history replay on a worker) for every cold read of a finished run.
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

export class KnownRuns {
  private readonly runs = new Map<string, RunSkeleton>();

  constructor(private readonly maxRuns = MAX_RUNS) {}

  /** The run's skeleton, or undefined when this process has not seen it (or has forgotten it). */
  get(runId: string): RunSkeleton | undefined {
    return this.runs.get(runId);
  }

  /** Records a run not yet finalized (at its start, or on its first read here). */
  remember(run: RunDoc): void {
    if (run.finalized) return;
    this.runs.delete(run._id);
    this.runs.set(run._id, {
      _id: run._id,
      account_id: run.account_id,
      published_workflow_id: run.published_workflow_id,
      published_workflow_version_id: run.published_workflow_version_id,
      version: run.version,
      created_at: run.created_at,
      webhook: run.webhook,
      metadata: run.metadata,
      ...(run.parent_run_id ? { parent_run_id: run.parent_run_id } : {}),
    });
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
