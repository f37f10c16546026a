/**
 * D38: re-running a run. A re-run is a start (D17 hold, D18 idempotency, D20 webhook, D37
 * metadata) of the parent's exact workflow version with its stored inputs, its metadata and its
 * webhook, recorded with `parent_run_id`. With `items: "failed"` the parent must have ended and
 * hold something that did not complete; the workflow then carries its completed items over
 * (workflows/carry-over.ts) and bills only what runs again.
 */
import { InvalidRequestError, NotFoundError } from '../../domain/errors';
import { isId } from '../../domain/ids';
import { isTerminal, type RunOutput } from '../../domain/run';
import type { RunDoc } from '../../store/documents';
import { storedItems } from '../../store/item-blocks';
import { chunksOf, findRunHead, runInputs } from '../../store/runs';
import type { RerunRequest, StartRequest } from '../contract/request-schemas';
import type { AuthContext } from '../auth/auth-context';
import type { EndWait } from '../temporal/run-gateway';
import { keyNamesThis, startIdempotent } from './idempotent-start';
import { startRun, type StartRunDeps } from './start-run';

/** Starts the re-run of `parentId` and returns its record as stored (status `pending`); `wait` as for startRun. */
export async function rerunRun(
  deps: StartRunDeps,
  auth: AuthContext,
  parentId: string,
  body: RerunRequest,
  idempotencyKey?: string,
  wait?: EndWait,
): Promise<RunDoc> {
  let parent = await readParent(deps, auth, parentId);
  // D38: the inputs are referenced, not copied: the record that holds them is the parent's own
  // holder (a re-run of a re-run) or the parent. Gone with a deleted ancestor (D39): nothing to run.
  const inputsFrom = parent.inputs_from ?? parent._id;
  // The head left the inputs out (read only once the run is known the caller's): from the record
  // that holds them.
  const inputs = await runInputs(deps.collections, { ...parent, inputs_from: inputsFrom });
  if (!inputs)
    throw new InvalidRequestError(
      `Run \`${parentId}\` cannot be re-run: its inputs were those of run \`${inputsFrom}\`, which has been deleted.`,
      { code: 'run_inputs_erased' },
    );
  const request: StartRequest = {
    workflowId: parent.published_workflow_id,
    version: parent.published_workflow_version_id,
    stream: body.stream,
    inputs,
    ...(parent.webhook ? { webhook: parent.webhook } : {}),
    // D36: the parent's controls and priority hold for its re-run too (a cap is per run: the re-run gets its own).
    ...(parent.max_cost !== undefined ? { max_cost: parent.max_cost } : {}),
    ...(parent.timeout_seconds !== undefined ? { timeout_seconds: parent.timeout_seconds } : {}),
    ...(parent.priority ? { priority: parent.priority } : {}),
    ...(parent.metadata && Object.keys(parent.metadata).length > 0
      ? { metadata: parent.metadata }
      : {}),
  };
  const rerun = { parentRunId: parent._id, items: body.items, inputsFrom };
  // D18: a repeat answers with its run, a reused key is 409, before the parent is judged.
  const repeat =
    idempotencyKey !== undefined &&
    (await keyNamesThis(deps, auth, request, idempotencyKey, { rerun }));
  if (body.items === 'failed' && !repeat) {
    // A run that has just ended (its GET says so) writes its record a moment later: wait for it.
    if (!parent.finalized && (await hasEnded(deps, parentId)))
      parent = await readParent(deps, auth, parentId);
    if (!parent.finalized)
      throw new InvalidRequestError(
        `Run \`${parentId}\` has not finished; re-run its failed items once it has (or re-run it with \`"items": "all"\`).`,
        { code: 'run_not_finished' },
      );
    if (!(await hasUnfinishedWork(deps, parent)))
      throw new InvalidRequestError(
        `Run \`${parentId}\` completed with no failed item: there is nothing to re-run.`,
        { code: 'nothing_to_rerun', param: 'items' },
      );
  }
  return idempotencyKey
    ? startIdempotent(deps, auth, request, idempotencyKey, { rerun, wait })
    : startRun(deps, auth, request, { rerun, wait });
}

/** The caller's run without its event log (a big run's is large; a re-run needs none of it); 404 otherwise. */
async function readParent(
  deps: StartRunDeps,
  auth: AuthContext,
  parentId: string,
): Promise<RunDoc> {
  // Another account's run is indistinguishable from a missing (or deleted, D39) one, and its inputs
  // (up to a megabyte of rows) are never read for this caller.
  const parent = isId('run', parentId)
    ? await findRunHead(deps.collections, auth.accountId, parentId)
    : null;
  if (!parent) throw new NotFoundError(`No run \`${parentId.slice(0, 64)}\`.`);
  return parent;
}

/** Whether a run whose record is not final yet has ended, once its workflow has closed (it closes after writing the record). */
async function hasEnded(deps: StartRunDeps, runId: string): Promise<boolean> {
  const snapshot = await deps.gateway.snapshot(runId, Number.MAX_SAFE_INTEGER);
  if (!snapshot || !isTerminal(snapshot.status)) return false;
  return deps.gateway.waitForClose(runId, FINALIZE_WAIT_MS);
}

/** How long a re-run waits for a just-ended parent's record (finalize retries a store blip meanwhile). */
const FINALIZE_WAIT_MS = 10_000;

/**
 * Whether a finished run left anything undone: it failed or was cancelled (rows that never ran),
 * or an output item failed. A big output is read a page at a time and the scan stops at the
 * first failed item.
 */
async function hasUnfinishedWork(deps: StartRunDeps, head: RunDoc): Promise<boolean> {
  if (head.status !== 'completed') return true;
  // D38: a completed run's record lists a stored output's failed rows when they are few: then no
  // chunk (a big run's event log, megabytes) or page is read.
  const listed = Object.values(head.stored_outputs ?? {});
  if (listed.some((output) => output.failed && output.failed.length > 0)) return true;
  // A big inline output (a list straight from a `batch`) is kept in chunks: read one at a time,
  // never joined (a million rows' items would all be in the API at once).
  const unfinished = (output: RunOutput) =>
    Object.values(output).some((items) => items.some((item) => item.status !== 'completed'));
  if (unfinished(head.output ?? {})) return true;
  for await (const chunk of chunksOf(deps.collections, head))
    if (unfinished(chunk.output)) return true;
  const stored = Object.values(head.stored_outputs ?? {});
  if (stored.length > 0 && !head.item_id_base) return true; // cannot tell: let the re-run find out
  for (const output of stored) {
    if (output.failed) continue; // listed, and empty: a non-empty list answered above
    for await (const item of storedItems(
      deps.collections,
      head._id,
      head.item_id_base!,
      output,
      0,
      false,
    ))
      if (item.status !== 'completed') return true;
  }
  return false;
}
