/**
 * D39: deleting a run. A live run is cancelled first (D8's cancel), so its own end books what it
 * cost; one that does not stop within CANCEL_WAIT_MS is terminated and settled (billed from its
 * history, while its key still opens it). Its webhook child is ended too. Then everything the
 * service keeps of it goes (store/erase-run.ts), its record last, and with the record the secret
 * its Temporal payloads' key derives from: the history Temporal keeps (or archived, or anyone
 * exported) can no longer be decrypted by anyone. This process forgets it at once (caches, key);
 * other API processes serve a finished run's cached view for at most FINISHED_RUN_CACHE_MS and
 * hold its secret in memory for at most 60 s (lib/codec/run-keys.ts).
 */
import type { Db } from 'mongodb';
import type { Collections } from '../../store/db';
import { findRunHead } from '../../store/runs';
import { eraseRun, type EraseCollections } from '../../store/erase-run';
import { isId } from '../../domain/ids';
import { DomainError, NotFoundError } from '../../domain/errors';
import { webhookWorkflowId } from '../../workflows/definitions';
import type { RunGateway } from '../temporal/run-gateway';
import { cancelRun } from './cancel-run';
import type { FinishedRunCache } from './finished-run-cache';
import type { KnownRuns } from './known-runs';
import type { StorageQuota } from '../../store/storage-quota';

/** How long a cancelled run gets to end by itself (its nodes abort within about a second, D8). */
export const CANCEL_WAIT_MS = 15_000;

export interface DeletedRun {
  id: string;
  object: 'run';
  deleted: true;
}

export interface DeleteRunDeps {
  collections: EraseCollections & Pick<Collections, 'ledger'>;
  db: Db;
  gateway: RunGateway;
  finishedRuns?: FinishedRunCache;
  knownRuns?: KnownRuns;
  /** D19: what the account stores; a deleted run's files and pages leave it at once. */
  fileQuota?: Pick<StorageQuota, 'forget'>;
}

/** Temporal's WorkflowExecutionStatus of a terminated workflow. */
const TERMINATED = 5;

/** Deletes the caller's run; 404 for an unknown run, another account's, or one deleted before. */
export async function deleteRun(
  deps: DeleteRunDeps,
  accountId: string,
  runId: string,
): Promise<DeletedRun> {
  // A run whose erasure began and was cut short (a crash) is found, so this DELETE finishes it.
  const run = isId('run', runId)
    ? await findRunHead(deps.collections, accountId, runId, { deleting: true })
    : null;
  if (!run) throw new NotFoundError(`No run \`${runId.slice(0, 64)}\`.`);
  // A run whose erasure began was stopped by the DELETE that began it (a cancel reads it no more).
  if (!run.finalized && !run.deleting) await stopRun(deps, accountId, runId);
  // A finalized run's workflow may not have closed yet (it starts its webhook child after
  // finalizing): once the key is gone it could never take another task, so it ends here. Its
  // webhook child (D20) may still be delivering the record: it ends before the record goes.
  // Both are no-ops for workflows that closed (or that Temporal has forgotten).
  await deps.gateway.terminate(runId, 'run deleted (D39)');
  await deps.gateway.terminate(webhookWorkflowId(runId), 'run deleted (D39)');
  deps.knownRuns?.forget(runId);
  const erased = await eraseRun(deps.collections, deps.db, runId);
  // After the erase too: a read racing it may have cached the view it read just before.
  deps.knownRuns?.forget(runId);
  deps.finishedRuns?.forget(runId);
  deps.gateway.codec?.forgetRun(runId);
  deps.fileQuota?.forget(accountId);
  // Deletes at once: the one that removed the record answers 200, the others 404 (a second DELETE).
  if (!erased.record) throw new NotFoundError(`No run \`${runId}\`.`);
  // Tidiness only (the key is gone): the UI stops listing the run's workflows.
  await Promise.all([
    deps.gateway.deleteExecution(runId),
    deps.gateway.deleteExecution(webhookWorkflowId(runId)),
  ]);
  return { id: runId, object: 'run', deleted: true };
}

/** Cancels a live run and waits for its end; terminates and settles it when it does not end in time. */
async function stopRun(deps: DeleteRunDeps, accountId: string, runId: string): Promise<void> {
  try {
    await cancelRun(deps, accountId, runId);
  } catch (err) {
    // It ended (completed or failed) meanwhile: nothing to cancel, its end is being written.
    if (!(err instanceof DomainError && err.code === 'run_not_cancellable')) throw err;
  }
  if (await deps.gateway.waitForClose(runId, CANCEL_WAIT_MS)) return;
  await deps.gateway.terminate(runId, 'run deleted (D39): it did not stop when cancelled');
  // Joins a settle under way (a reader that found the run closed first) instead of a second one.
  await deps.gateway.settle(runId, TERMINATED);
}
