/**
 * D28 `Prefer: wait=N`: holds a start's answer until the run ends. The run's `awaitEnd` update
 * completes the moment the workflow reaches its terminal state, before the record is written
 * (bench/FINDINGS.md P2: waiting for the workflow to close cost ~150 ms of finalize writes).
 */
import { awaitEndUpdate } from '../../workflows/definitions';
import type { RunDoc } from '../../store/documents';
import { runView } from '../../store/run-view';
import type { RunView } from '../response-schemas';
import type { RunGateway } from '../run-gateway';
import { readRun, type ReadRunDeps } from './read-run';

/** The run's view once it has ended, or null when `ms` passed first. */
export async function awaitRunEnd(deps: ReadRunDeps & { gateway: RunGateway }, run: RunDoc, ms: number): Promise<RunView | null> {
  const deadline = Date.now() + ms;
  const handle = deps.gateway.client.workflow.getHandle(run._id);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  try {
    const snapshot = await deps.gateway.client.connection.withAbortSignal(controller.signal, () => handle.executeUpdate(awaitEndUpdate));
    // An output too large for an update answer is read from the record once it is written.
    if (!snapshot.outputDeferred) return runView(run, snapshot);
  } catch {
    if (controller.signal.aborted) return null;
    // The workflow closed already (an idempotent repeat of an old run) or cannot take updates: wait on its close instead.
  } finally {
    clearTimeout(timer);
  }
  const left = deadline - Date.now();
  return left > 0 && (await deps.gateway.waitForEnd(run._id, left)) ? readRun(deps, run.account_id, run._id) : null;
}
