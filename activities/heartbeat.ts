/**
 * Heartbeats and checkpoints of node activities. A node's code calls `heartbeating`,
 * `checkpoint` and `resumedCheckpoint` the same way whether it runs as an activity of its own or
 * as one row of a chunk (activities/node-chunk.ts): inside a chunk the row's checkpoint goes into
 * the chunk's heartbeat, which reports every row at once.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Context } from '@temporalio/activity';

/** How often a waiting activity tells Temporal it is alive; a cancel request arrives in the answer. */
export const HEARTBEAT_EVERY_MS = 1_000;

/** A row of a chunk: the checkpoint an earlier attempt left for it, and where its new one goes. */
export interface RowScope {
  resumed: unknown;
  checkpoint(details: unknown): void;
  /** D36: told when this attempt of the row sends a request, so a failed attempt counts as a call made. */
  sent?(): void;
}

const rowScopes = new AsyncLocalStorage<RowScope>();

/** Runs one row of a chunk with its own checkpoint scope. */
export function inRow<T>(scope: RowScope, work: () => Promise<T>): Promise<T> {
  return rowScopes.run(scope, work);
}

function currentContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined; // called outside an activity (unit use): nothing to report to
  }
}

/**
 * Runs `work` while heartbeating, so a run's cancel (D8) reaches an activity that is waiting on
 * a provider: Temporal delivers cancellation only through heartbeats, and then the activity's
 * cancellation signal aborts the provider call in flight. Inside a chunk the chunk heartbeats.
 */
export async function heartbeating<T>(work: () => Promise<T>, details?: () => unknown): Promise<T> {
  const context = currentContext();
  if (!context || rowScopes.getStore()) return work();
  // `details` is a checkpoint a retried attempt reads back (a model node's prediction id, so a retry resumes it).
  const beat = () => context.heartbeat(details?.());
  beat();
  const timer = setInterval(beat, HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** The checkpoint an earlier attempt of this row (or activity) recorded, if any. */
export function resumedCheckpoint(): unknown {
  const row = rowScopes.getStore();
  if (row) return row.resumed;
  return currentContext()?.info.heartbeatDetails;
}

/**
 * D36: says that the row being run sends a request to its provider now (every HTTP call of a
 * node's row goes through activities/provider-http.ts or the http_request node's own send).
 */
export function requestSent(): void {
  rowScopes.getStore()?.sent?.();
}

/** Records a checkpoint at once, so an attempt that dies now lets its retry resume from it. */
export function checkpoint(details: unknown): void {
  const row = rowScopes.getStore();
  if (row) row.checkpoint(details);
  else currentContext()?.heartbeat(details);
}
