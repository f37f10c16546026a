/**
 * Run records: created by the API, finalized by the workflow's last activity (or settled by the
 * API when Temporal closed the workflow before it could finish).
 *
 * Every lookup filters by `_id` alone and checks the rest in code. On MongoDB that is the same
 * `_id` index either way; FerretDB 1.x pushes only an exact `{_id}` filter down to SQLite and
 * scans the whole collection for anything more (tools/bench/FINDINGS.md P5: ~8× cheaper per read).
 */
import type { RunEvent, RunFinal, RunOutput, RunStatus } from '../domain/run';
import { joinOutput, logOfChunks, type RunChunk, type StoredChunk } from '../domain/run-chunks';
import { RunLog } from '../domain/run-log';
import type { Collections } from './db';
import type { RunChunkDoc, RunDoc, StoredRunDoc } from './documents';
import { bulkOutcomes } from './bulk-outcomes';
import type { Outcome } from './group-commit';
import { isDuplicateKey } from './ledger';
import { metadataFromTags, metadataTags } from './run-metadata';

/** Stores a new run as `pending` (D7) before its workflow starts. */
export async function insertRun(c: Pick<Collections, 'runs'>, run: RunDoc): Promise<void> {
  await c.runs.insertOne(toStored(run));
}

/**
 * Stores new runs in one command (the group commit of starts, store/run-writes.ts); each run's
 * own outcome, in order: a duplicate `_id` (code 11000) fails that run alone.
 */
export function insertRuns(c: Pick<Collections, 'runs'>, runs: RunDoc[]): Promise<Outcome<void>[]> {
  return bulkOutcomes(runs.length, () => c.runs.insertMany(runs.map(toStored), { ordered: false }));
}

/** The run a stored document holds, its output and events parsed (StoredRunDoc says why they are text). */
export function fromStored<T extends Partial<StoredRunDoc>>(
  stored: T,
): Omit<T, 'output_json' | 'events_json' | 'metadata_tags' | 'inputs_json' | 'inputs'> &
  Pick<RunDoc, 'output' | 'events' | 'inputs'> &
  Required<Pick<RunDoc, 'metadata'>> {
  const { output_json, events_json, metadata_tags, inputs_json, inputs, ...rest } = stored;
  return {
    ...rest,
    inputs: inputs_json != null ? storedInputs(inputs_json) : (inputs ?? {}),
    output: parseOrNull(output_json),
    events: parseOrNull(events_json),
    metadata: metadataFromTags(metadata_tags),
  };
}

function toStored(run: RunDoc): StoredRunDoc {
  const { output, events, metadata, inputs, ...rest } = run;
  return {
    ...rest,
    inputs_json: JSON.stringify(inputs),
    output_json: jsonOrNull(output),
    events_json: jsonOrNull(events),
    ...(metadata && Object.keys(metadata).length > 0
      ? { metadata_tags: metadataTags(metadata) }
      : {}),
  };
}

function storedInputs(json: string): Record<string, unknown> {
  return JSON.parse(json) as Record<string, unknown>;
}

function jsonOrNull(value: unknown): string | null {
  return value == null ? null : JSON.stringify(value);
}

function parseOrNull<T>(json: string | null | undefined): T | null {
  return json == null ? null : (JSON.parse(json) as T);
}

/**
 * The caller's run without its chunks joined in (D31; for a big run `output` holds only its labels:
 * read the chunks with `chunksOf`), without its event log (`events` is null) and without its
 * inputs (`inputs` is empty: read them with runInputs). Reads, output pages and deletes use
 * neither: the log of a small run of many items holds every item again, and a big run's inputs
 * may be a megabyte of rows (D35), so they are neither sent nor parsed for every read.
 */
export async function findRunHead(
  c: Pick<Collections, 'runs'>,
  accountId: string,
  runId: string,
  /** Also a run whose erasure began (D39): only a repeated DELETE reads it, to finish it. */
  { deleting = false }: { deleting?: boolean } = {},
): Promise<RunDoc | null> {
  const doc = await c.runs.findOne(
    { _id: runId },
    { projection: { events_json: 0, inputs_json: 0, inputs: 0 } },
  );
  if (!doc || doc.account_id !== accountId || (doc.deleting && !deleting)) return null;
  return fromStored(doc);
}

/**
 * The stored chunks of a finalized run in order, from one query: FerretDB scans the whole
 * collection for every query and every batch of a cursor, so one batch (the driver's default, at
 * most 16 MB) beats one lookup per chunk or small batches (bench P4b). A reader holds that batch.
 */
export async function* chunksOf(
  c: Pick<Collections, 'runChunks'>,
  doc: Pick<RunDoc, '_id' | 'chunks' | 'finalized'>,
  opts: { output: boolean } = { output: true },
): AsyncGenerator<StoredChunk> {
  if (!doc.finalized || !doc.chunks) return;
  // A reader of the log alone (findRunLog) leaves the items out: a chunk holds up to 512 KB of them.
  const projection = opts.output ? {} : { output_json: 0 };
  let index = 0;
  for await (const chunk of c.runChunks
    .find({ run_id: doc._id }, { projection })
    .sort({ index: 1 })) {
    if (chunk.index !== index) break;
    yield parseChunk(chunk);
    index++;
  }
  if (index !== doc.chunks) throw new Error(`chunk ${index} of run ${doc._id} is missing`);
}

/**
 * D38: any account's run without its event log (a big run's is large) and without its chunks
 * joined (and, with `inputs: false`, without its inputs), or null: what a re-run needs of its
 * parent. The caller checks the owner.
 */
export async function findRunWithoutLog(
  c: Pick<Collections, 'runs'>,
  runId: string,
  opts: { inputs: boolean } = { inputs: true },
): Promise<RunDoc | null> {
  // A re-run's carry-over needs no inputs: leaving them out spares the transfer and parsing of a
  // big run's rows (~0.9 MB for 100,000; `inputs` is then empty).
  const projection = opts.inputs
    ? { events_json: 0 }
    : { events_json: 0, inputs_json: 0, inputs: 0 };
  const doc = await c.runs.findOne({ _id: runId }, { projection });
  // D39: a run whose erasure began is gone to its stream links, settles and re-runs too.
  return doc && !doc.deleting ? fromStored(doc) : null;
}

/**
 * Any account's run with its output joined from its chunks, without its event log (findRunLog),
 * or null: for operators (the CLI). The items of stored outputs (D35) stay in their blocks.
 */
export async function findRunRecord(
  c: Pick<Collections, 'runs' | 'runChunks'>,
  runId: string,
): Promise<RunDoc | null> {
  const doc = await c.runs.findOne({ _id: runId }, { projection: { events_json: 0 } });
  if (!doc) return null;
  const run = fromStored(doc);
  if (!run.finalized || !run.chunks) return run;
  const chunks: StoredChunk[] = [];
  for await (const chunk of chunksOf(c, run)) chunks.push(chunk);
  return { ...run, output: joinOutput(run, chunks) };
}

/**
 * A run's status and, once its record is final, its whole event log (D11), kept compact
 * (domain/run-log.ts: a million rows' events are a few thousand numbers), or null without a
 * record. What a stream replays; nothing else reads the log. `log` is null while the run is live
 * (its workflow holds the log then).
 */
export async function findRunLog(
  c: Pick<Collections, 'runs' | 'runChunks'>,
  runId: string,
): Promise<{ status: RunStatus; log: RunLog | null } | null> {
  const doc = await c.runs.findOne(
    { _id: runId },
    { projection: { status: 1, finalized: 1, chunks: 1, item_id_base: 1, events_json: 1 } },
  );
  if (!doc) return null;
  const events = parseOrNull<RunEvent[]>(doc.events_json);
  if (!doc.finalized || !events) return { status: doc.status, log: null };
  if (!doc.chunks) return { status: doc.status, log: RunLog.of(events) };
  const chunks: StoredChunk[] = [];
  for await (const chunk of chunksOf(c, doc, { output: false })) chunks.push(chunk);
  return {
    status: doc.status,
    log: logOfChunks({ events, item_id_base: doc.item_id_base }, chunks),
  };
}

/**
 * D38: a run's inputs, from the record that holds them (a re-run references its first ancestor's,
 * `inputs_from`), or null when that record is gone (deleted, D39, or expired, D29) or belongs to
 * another account.
 */
export async function runInputs(
  c: Pick<Collections, 'runs'>,
  run: Pick<RunDoc, 'inputs' | 'inputs_from' | 'account_id'>,
): Promise<Record<string, unknown> | null> {
  if (!run.inputs_from) return run.inputs;
  const holder = await c.runs.findOne(
    { _id: run.inputs_from },
    { projection: { inputs_json: 1, inputs: 1, account_id: 1, deleting: 1 } },
  );
  // Erased with their holder (D39), also while its erasure is under way.
  return holder && holder.account_id === run.account_id && !holder.deleting
    ? fromStored(holder).inputs
    : null;
}

/** True when a run record `runId` exists (any account's: for operators). */
export async function runExists(c: Pick<Collections, 'runs'>, runId: string): Promise<boolean> {
  return (await c.runs.findOne({ _id: runId }, { projection: { _id: 1 } })) !== null;
}

/** The account a run belongs to, whoever asks (the worker), or null when it has no record. */
export async function runAccountId(
  c: Pick<Collections, 'runs'>,
  runId: string,
): Promise<string | null> {
  const doc = await c.runs.findOne({ _id: runId }, { projection: { account_id: 1 } });
  return doc?.account_id ?? null;
}

/** Stores one chunk of a large run's end; storing it again (an activity retry) changes nothing. */
export async function saveRunChunk(
  c: Pick<Collections, 'runChunks'>,
  chunk: RunChunk,
): Promise<void> {
  try {
    await c.runChunks.insertOne({
      _id: chunkId(chunk.runId, chunk.index),
      run_id: chunk.runId,
      index: chunk.index,
      item_events: chunk.itemEvents,
      output_json: JSON.stringify(chunk.output),
      created_at: new Date(),
    });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
}

function parseChunk(chunk: RunChunkDoc): StoredChunk {
  return {
    index: chunk.index,
    itemEvents: chunk.item_events,
    events:
      chunk.events_json === undefined ? undefined : (JSON.parse(chunk.events_json) as RunEvent[]),
    output: chunk.output_json === undefined ? {} : (JSON.parse(chunk.output_json) as RunOutput),
  };
}

function chunkId(runId: string, index: number): string {
  return `${runId}.${index}`;
}

/**
 * Writes the end of a run over its record. Returns whether this call changed the record: a
 * retried attempt carries the same `final`, so it changes nothing. Filtered by `_id` alone, the one
 * filter FerretDB 1.x pushes down to SQLite (a guard such as `finalized: {$ne: true}` made every
 * finalize a scan of the collection decoded in Go, about 4× the cost there; on MongoDB both use
 * the `_id` index). So it does not check that no other end was written first: store/run-end.ts
 * calls it only for the end whose debit it booked.
 */
export async function finalizeRunRecord(
  c: Pick<Collections, 'runs'>,
  final: RunFinal,
): Promise<boolean> {
  const res = await c.runs.updateOne({ _id: final.runId }, { $set: finalFields(final) });
  return res.modifiedCount === 1;
}

/**
 * finalizeRunRecord for many runs in one command (the group commit of finalizes,
 * store/run-writes.ts), each filtered by `_id` alone; each run's own outcome, in order. The server
 * reports only totals of what an update changed, so unlike finalizeRunRecord this does not tell
 * whether a record was already so.
 */
export function finalizeRunRecords(
  c: Pick<Collections, 'runs'>,
  finals: RunFinal[],
): Promise<Outcome<void>[]> {
  return bulkOutcomes(finals.length, () =>
    c.runs.bulkWrite(
      finals.map((final) => ({
        updateOne: { filter: { _id: final.runId }, update: { $set: finalFields(final) } },
      })),
      { ordered: false },
    ),
  );
}

/**
 * Writes the end of a run unless its record is finalized already (the guard is in the filter):
 * for the ends store/run-end.ts has no debit to decide by. Returns whether this call wrote it.
 */
export async function finalizeRunRecordOnce(
  c: Pick<Collections, 'runs'>,
  final: RunFinal,
): Promise<boolean> {
  const res = await c.runs.updateOne(
    { _id: final.runId, finalized: { $ne: true } },
    { $set: finalFields(final) },
  );
  return res.modifiedCount === 1;
}

function finalFields(final: RunFinal) {
  return {
    status: final.status,
    output_json: jsonOrNull(final.output),
    error: final.error,
    total_cost: final.totalCost,
    completed_at: new Date(final.completedAtMs),
    events_json: jsonOrNull(final.events),
    chunks: final.chunks ?? 0,
    item_id_base: final.itemIdBase ?? null,
    stored_outputs: final.storedOutputs ?? null,
    ...(final.itemsAtRows ? { items_at_rows: true } : {}),
    ...(final.usage ? { usage: final.usage } : {}),
    finalized: true,
  } satisfies Partial<StoredRunDoc>;
}

/** Forgets a run whose workflow could not be started, so it never shows as pending forever; true if this call removed it. */
export async function deleteRun(c: Pick<Collections, 'runs'>, runId: string): Promise<boolean> {
  const res = await c.runs.deleteOne({ _id: runId, finalized: { $ne: true } });
  return res.deletedCount === 1;
}
