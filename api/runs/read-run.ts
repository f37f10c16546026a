/** Reading a run (spec "GET /api/v1/runs/{runId}"): the final record once written, the workflow's query while it is live. */
import type { Readable } from 'node:stream';
import { isId } from '../../domain/ids';
import type { Collections } from '../../store/db';
import type { RunDoc } from '../../store/documents';
import { findRun, findRunHead } from '../../store/runs';
import { NotFoundError } from '../../domain/errors';
import type { RunGateway } from '../temporal/run-gateway';
import type { RunView } from '../../domain/run-view';
import { isSettled, runView, type RunViewSource } from '../../domain/run-view';
import { findDelivery } from '../../store/webhook-deliveries';
import { isTerminal, webhookMessageId } from '../../domain/run';
import type { FinishedRunCache } from './finished-run-cache';
import { pendingRecord, type KnownRuns } from './known-runs';
import { streamRunView } from './run-view-stream';

/** The caller's run record, or 404 (unknown, malformed or another account's id look the same). */
export async function loadRun(
  collections: Pick<Collections, 'runs' | 'runChunks' | 'itemBlocks'>,
  accountId: string,
  runId: string,
): Promise<RunDoc> {
  const doc = isId('run', runId) ? await findRun(collections, accountId, runId) : null;
  if (!doc) throw notFound(runId);
  return doc;
}

function notFound(runId: string): NotFoundError {
  return new NotFoundError(`No run \`${runId.slice(0, 64)}\`.`);
}

/** What reading a run needs. */
export interface ReadRunDeps {
  collections: Pick<Collections, 'runs' | 'runChunks' | 'itemBlocks' | 'webhookDeliveries'>;
  gateway: RunGateway;
  finishedRuns?: FinishedRunCache;
  knownRuns?: KnownRuns;
}

/**
 * The current run view: the final record once written (served long after Temporal forgot the
 * run), else live state. Store round trips: none for a finished run read before in this process
 * (FinishedRunCache), none for a live run this process started or has read (KnownRuns), else one.
 */
export async function readRun(
  deps: ReadRunDeps,
  accountId: string,
  runId: string,
): Promise<RunView> {
  return (await read(deps, accountId, runId, false)) as RunView; // never a stream when not asked for one
}

/**
 * The answer of GET /api/v1/runs/{runId}: readRun's view, or for a finished big run (D31) the same
 * JSON as a stream that reads one stored chunk at a time, so 100,000 items never sit in memory at once.
 */
export function readRunBody(
  deps: ReadRunDeps,
  accountId: string,
  runId: string,
): Promise<RunView | Readable> {
  return read(deps, accountId, runId, true);
}

async function read(
  deps: ReadRunDeps,
  accountId: string,
  runId: string,
  streamBig: boolean,
): Promise<RunView | Readable> {
  const cached = deps.finishedRuns?.get(accountId, runId);
  if (cached) return cached;
  const known = deps.knownRuns?.get(runId);
  if (known && known.account_id !== accountId) throw notFound(runId);
  const live = known ? await liveView(deps, runId, pendingRecord(known)) : undefined;
  if (live) return live;
  // Streamed, a big run's record is read without its chunks, which the stream reads one by one.
  const doc = streamBig
    ? await findRunHead(deps.collections, accountId, runId).then(
        (head) => head ?? Promise.reject(notFound(runId)),
      )
    : await loadRun(deps.collections, accountId, runId);
  if (doc.finalized) {
    deps.knownRuns?.forget(runId);
    // D20: a finished run with a webhook shows its delivery (one more lookup, for those runs only).
    const delivery = doc.webhook
      ? await findDelivery(deps.collections, webhookMessageId(doc._id))
      : null;
    const big = !!doc.chunks || !!doc.stored_outputs;
    if (big && streamBig) return streamRunView(deps.collections, doc, delivery);
    const view = runView(doc, undefined, delivery);
    // Cached once nothing can change it (a delivery's progress is never served stale), and not a big run's view.
    if (!big && isSettled(view)) deps.finishedRuns?.set(accountId, view);
    return view;
  }
  deps.knownRuns?.remember(doc);
  rememberSecret(deps, doc);
  // A known run's workflow was asked already: it had no news.
  return (known ? undefined : await liveView(deps, runId, doc)) ?? runView(doc);
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
 * The view of a run not finalized when last looked at, from its workflow's query (`pending` while
 * it is queued); undefined when only the stored record can answer (Temporal has no news).
 */
async function liveView(
  deps: ReadRunDeps,
  runId: string,
  record: RunViewSource & Pick<RunDoc, 'account_id'>,
): Promise<RunView | undefined> {
  // No events wanted here: ask only for status and results.
  const { snapshot, queued } = await deps.gateway.probe(runId, Number.MAX_SAFE_INTEGER);
  if (!snapshot) return queued ? runView(record) : undefined;
  // Completed with an output too large for a query answer: it shows completed once its record is written.
  if (snapshot.outputDeferred) {
    // Forgotten, so the next read asks the store first: once the record is written it answers
    // (a big run's record, streamed), and a closed workflow is not replayed for every read.
    deps.knownRuns?.forget(runId);
    return runView(record, { ...snapshot, status: 'running', completed_at_ms: null });
  }
  // No write here: the worker's finalize is the only update of a run document. FerretDB does not
  // isolate concurrent updates of one document, and a "mark running" write raced it and undid it.
  // D20: an ended run with a webhook shows its delivery (one more lookup, for those runs only).
  const ended = isTerminal(snapshot.status);
  const delivery =
    ended && record.webhook ? await findDelivery(deps.collections, webhookMessageId(runId)) : null;
  const view = runView(record, snapshot, delivery);
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
