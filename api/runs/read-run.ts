/**
 * Reading a run (spec "GET /api/v1/runs/{runId}"): the final record once written, the workflow's
 * query while it is live. readRunAnswer gives the answer of every read that returns the run (GET,
 * a cancel, a `Prefer: wait` start) with its status; a finished big run's answer is a byte stream
 * (D31) that reads its chunks and item blocks one at a time, so no read holds a big run's items
 * (D35). Its steps: fromThisProcess, the record's head, then finishedView or unfinishedView.
 * loadRunHead is the ownership check of the routes that need the record itself.
 */
import type { Readable } from 'node:stream';
import { isId } from '../../domain/ids';
import type { Collections } from '../../store/db';
import type { RunDoc, WebhookDeliveryDoc } from '../../store/documents';
import { findRunHead } from '../../store/runs';
import { NotFoundError } from '../../domain/errors';
import type { RunGateway } from '../temporal/run-gateway';
import type { RunView } from '../../domain/run-view';
import { isSettled, runView, type RunViewSource } from '../../domain/run-view';
import { findDelivery } from '../../store/webhook-deliveries';
import { isTerminal, webhookMessageId, type RunSnapshot, type RunStatus } from '../../domain/run';
import type { FinishedRunCache } from './finished-run-cache';
import { pendingRecord, type KnownRuns, type RunSkeleton } from './known-runs';
import { isBigRun, streamRunView } from '../../store/run-view-stream';
import { endNeverStarted, neverStarted } from './settle-never-started';

/**
 * The caller's run record without its chunks, items or event log, or 404: unknown, malformed or
 * another account's id look the same. The ownership check of the routes that need the record itself.
 */
export async function loadRunHead(
  collections: Pick<Collections, 'runs'>,
  accountId: string,
  runId: string,
): Promise<RunDoc> {
  const doc = isId('run', runId) ? await findRunHead(collections, accountId, runId) : null;
  if (!doc) throw notFound(runId);
  return doc;
}

function notFound(runId: string): NotFoundError {
  return new NotFoundError(`No run \`${runId.slice(0, 64)}\`.`);
}

/** What reading a run needs. */
export interface ReadRunDeps {
  collections: Pick<
    Collections,
    'runs' | 'runChunks' | 'itemBlocks' | 'webhookDeliveries' | 'ledger'
  >;
  gateway: RunGateway;
  finishedRuns?: FinishedRunCache;
  knownRuns?: KnownRuns;
}

/** A run as a read answers it: its status, and its view (a finished big run's as a byte stream, D31). */
export interface RunAnswer {
  status: RunStatus;
  body: RunView | Readable;
}

/**
 * The current run: the final record once written (served long after Temporal forgot the run),
 * else live state. Store round trips: none for a finished run read before in this process
 * (FinishedRunCache), none for a live run this process started or has read (KnownRuns), else one
 * for the record's head (a big run's chunks and items are read as its answer is sent). Without
 * `output` the view shows `output: null` and a big run's items are not read at all.
 */
export async function readRunAnswer(
  deps: ReadRunDeps,
  accountId: string,
  runId: string,
  { output = true }: { output?: boolean } = {},
): Promise<RunAnswer> {
  const answer = (view: RunView): RunAnswer => ({
    status: view.status,
    body: output ? view : { ...view, output: null },
  });
  const known = await fromThisProcess(deps, accountId, runId);
  if (known.view) return answer(known.view);
  let doc = await loadRunHead(deps.collections, accountId, runId);
  if (!doc.finalized) {
    const live = await unfinishedView(deps, doc, known.skeleton);
    if (live !== 'closed') return answer(live);
    // Its workflow closed unfinished and this read settled the run (or joined the settle under
    // way, which may wait for a block's last write: settle-run.ts LATE_WRITES_MS): the record
    // read before says `pending`, the one now stored answers.
    doc = await loadRunHead(deps.collections, accountId, runId);
    if (!doc.finalized) return answer(runView(doc));
  }
  const delivery = await finishedDelivery(deps, doc);
  if (!isBigRun(doc)) return answer(finishedView(deps, doc, delivery));
  // Without its items a big run's view is its head's, as a list shows it: nothing to stream.
  return output
    ? { status: doc.status, body: streamRunView(deps.collections, doc, delivery) }
    : answer(runView(doc, undefined, delivery, Date.now()));
}

/**
 * Step 1, no store round trip: a finished run's cached view, or a run this process has seen live
 * (its skeleton, and its workflow's answer when Temporal has news). Another account's run is a 404.
 */
async function fromThisProcess(
  deps: ReadRunDeps,
  accountId: string,
  runId: string,
): Promise<{ view?: RunView; skeleton?: RunSkeleton }> {
  const cached = deps.finishedRuns?.get(accountId, runId);
  if (cached) return { view: cached };
  const skeleton = deps.knownRuns?.get(runId);
  if (!skeleton) return {};
  if (skeleton.account_id !== accountId) throw notFound(runId);
  const view = await liveView(deps, runId, pendingRecord(skeleton));
  // Closed: the record, read next, is the answer (a settle of the run was awaited).
  return { view: view === 'closed' ? undefined : view, skeleton };
}

/**
 * Step 3a, a finalized record: this process stops treating the run as live, and D20: a run with a
 * webhook shows its delivery (one more lookup, for those runs only).
 */
async function finishedDelivery(
  deps: ReadRunDeps,
  doc: RunDoc,
): Promise<WebhookDeliveryDoc | null> {
  deps.knownRuns?.forget(doc._id);
  return doc.webhook ? findDelivery(deps.collections, webhookMessageId(doc._id)) : null;
}

/** The view of a finalized record, cached once nothing can change it (a delivery's progress is never served stale), and not a big run's view. */
function finishedView(
  deps: ReadRunDeps,
  doc: RunDoc,
  delivery: WebhookDeliveryDoc | null,
): RunView {
  const view = runView(doc, undefined, delivery, Date.now());
  if (!isBigRun(doc) && isSettled(view)) deps.finishedRuns?.set(doc.account_id, view);
  return view;
}

/**
 * Step 3b: a record not finalized. Remembered (with its payloads' secret) for the next read; its
 * workflow is asked unless this process knew the run already (then it was asked in step 1 and had
 * no news). `closed`: the workflow had closed, so its settle was awaited: read the record again.
 */
async function unfinishedView(
  deps: ReadRunDeps,
  doc: RunDoc,
  skeleton: RunSkeleton | undefined,
): Promise<RunView | 'closed'> {
  deps.knownRuns?.remember(doc);
  rememberSecret(deps, doc);
  return (skeleton ? undefined : await liveView(deps, doc._id, doc, doc)) ?? runView(doc);
}

/** A record whose start died before its workflow (settle-never-started.ts): ended, and read again as stored. */
async function settledNeverStarted(deps: ReadRunDeps, doc: RunDoc): Promise<RunView | undefined> {
  const ended = await endNeverStarted(deps.collections, doc);
  deps.knownRuns?.forget(doc._id);
  return ended ? runView(ended) : undefined;
}

/** D39: the record read carries the secret of its payloads' key: asking its workflow next needs no second read. */
export function rememberSecret(
  deps: Pick<ReadRunDeps, 'gateway'>,
  doc: Pick<RunDoc, '_id' | 'payload_secret'>,
): void {
  if (doc.payload_secret)
    deps.gateway.codec?.runSecrets?.remember(doc._id, Buffer.from(doc.payload_secret, 'base64'));
}

/**
 * A live run as it is shown: completed with an output too large for a query answer, it shows
 * `running` until its record is written (its output is read from there), never completed with none.
 */
export function shownSnapshot(snapshot: RunSnapshot): RunSnapshot {
  return snapshot.outputDeferred
    ? { ...snapshot, status: 'running', completed_at_ms: null }
    : snapshot;
}

/**
 * The view of a run not finalized when last looked at, from its workflow's query (`pending` while
 * it is queued); undefined when only the stored record can answer (Temporal has no news), `closed`
 * when its workflow had closed (the record read before this is stale). A stored record Temporal
 * has no workflow for, old enough, is a start that died: it is ended here.
 */
async function liveView(
  deps: ReadRunDeps,
  runId: string,
  record: RunViewSource & Pick<RunDoc, 'account_id'>,
  /** The whole record, when it was just read from the store: only it can tell a start that died (its hold). */
  stored?: RunDoc,
): Promise<RunView | 'closed' | undefined> {
  // No events wanted here: ask only for status and results.
  const probe = await deps.gateway.probe(runId, Number.MAX_SAFE_INTEGER);
  const { snapshot, queued, missing } = probe;
  if (!snapshot) {
    if (missing && stored && neverStarted(stored)) return settledNeverStarted(deps, stored);
    if (probe.closed) return 'closed';
    return queued ? runView(record) : undefined;
  }
  if (snapshot.outputDeferred) {
    // Forgotten, so the next read asks the store first: once the record is written it answers
    // (a big run's record, streamed), and a closed workflow is not replayed for every read.
    deps.knownRuns?.forget(runId);
    return runView(record, shownSnapshot(snapshot));
  }
  // No write here: the worker's finalize is the only update of a run document. FerretDB does not
  // isolate concurrent updates of one document, and a "mark running" write raced it and undid it.
  // D20: an ended run with a webhook shows its delivery (one more lookup, for those runs only).
  const ended = isTerminal(snapshot.status);
  const delivery =
    ended && record.webhook ? await findDelivery(deps.collections, webhookMessageId(runId)) : null;
  const view = runView(record, snapshot, delivery, Date.now());
  if (ended) {
    // Ended (D7: for good): from now on the final record answers, not the closed workflow. A view
    // that cannot change any more is the finished view at once, in this process without reading
    // the record; one whose webhook is still being delivered is read from the record (and its
    // delivery) next time.
    deps.knownRuns?.forget(runId);
    if (isSettled(view)) deps.finishedRuns?.set(record.account_id, view);
  }
  return view;
}
