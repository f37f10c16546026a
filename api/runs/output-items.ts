/**
 * D31/D35: one output of a run, a page at a time (the D23 list shape) or whole as JSON Lines or CSV
 * (the results file), for runs live or finished. A stored output (D35) is read from its blocks by `_id`,
 * so a page costs the same at any offset; a finished big run's other outputs are read chunk by
 * chunk from its record; a live run's other outputs answer from the workflow.
 */
import { idAtOffset, isId, offsetOf } from '../../domain/ids';
import type { StoredOutput } from '../../domain/item-blocks';
import type { Collections } from '../../store/db';
import type { RunDoc } from '../../store/documents';
import { storedItemLines, storedItems } from '../../store/item-blocks';
import { chunksOf, findRunHead } from '../../store/runs';
import { versionOutputKeys } from '../../store/workflows';
import { itemCsv } from './output-csv';
import { inPieces } from './results-pieces';
import type { OutputItem } from '../../domain/run';
import { InvalidRequestError, NotFoundError, ServiceUnavailableError } from '../../domain/errors';
import type { OutputItemList } from '../contract/response-schemas';
import type { RunGateway } from '../temporal/run-gateway';
import type { OutputItemsQuery } from '../contract/request-schemas';

/** What paging an output needs. */
export interface OutputItemsDeps {
  collections: Pick<Collections, 'runs' | 'runChunks' | 'itemBlocks' | 'workflowVersions'>;
  gateway: RunGateway;
}

async function headOf(deps: OutputItemsDeps, accountId: string, runId: string): Promise<RunDoc> {
  const doc = isId('run', runId) ? await findRunHead(deps.collections, accountId, runId) : null;
  if (!doc) throw new NotFoundError(`No run \`${runId.slice(0, 64)}\`.`);
  return doc;
}

/** A page of the caller's run's output `key`: 404 for an unknown run or key, 400 for a cursor that is not one of its items. */
export async function listOutputItems(
  deps: OutputItemsDeps,
  accountId: string,
  runId: string,
  key: string,
  query: OutputItemsQuery,
): Promise<OutputItemList> {
  let doc = await headOf(deps, accountId, runId);
  const after = query.starting_after ?? null;

  if (!doc.finalized) {
    const live = await deps.gateway.outputPage(runId, key, after, query.limit);
    // No news from the workflow: it may have just ended, its record written meanwhile.
    if (!live) doc = await headOf(deps, accountId, runId);
    if (live || !doc.finalized) {
      if (live && live.value === null) throw unknownOutput(key);
      const value = live?.value;
      if (value?.stored && value.itemIdBase)
        return storedPage(
          deps,
          runId,
          value.itemIdBase,
          value.stored,
          after,
          query.limit,
          !value.ended,
        );
      if (value?.unknown_cursor) throw unknownCursor(after!);
      return page(value?.items ?? [], value?.has_more ?? false);
    }
  }

  const stored = storedOutput(doc, key);
  if (stored && doc.item_id_base)
    return storedPage(deps, runId, doc.item_id_base, stored, after, query.limit, false);
  await checkOutputKey(deps, doc, key);
  const labels = doc.output ?? {};
  const items: OutputItem[] = [];
  let found = after === null;
  const take = (list: readonly OutputItem[]): boolean => {
    for (const item of list) {
      if (!found) found = item.id === after;
      else if (items.push(item) > query.limit) return true;
    }
    return false;
  };
  let full = take(ownItems(labels, key));
  for await (const chunk of chunksOf(deps.collections, doc)) {
    if (full) break;
    full = take(ownItems(chunk.output, key));
  }
  if (!found) throw unknownCursor(after!);
  return page(items.slice(0, query.limit), items.length > query.limit);
}

/** The items of output `key`, by own property only: `constructor` or `__proto__` is an unknown key, not Object's. */
/** A stored output (D35) of the run, by own property only, like `ownItems`. */
function storedOutput(doc: RunDoc, key: string): StoredOutput | undefined {
  const outputs = doc.stored_outputs;
  return outputs && Object.hasOwn(outputs, key) ? outputs[key] : undefined;
}

function ownItems(
  output: Readonly<Record<string, readonly OutputItem[]>>,
  key: string,
): readonly OutputItem[] {
  return Object.hasOwn(output, key) ? output[key] : [];
}

/** A page of a stored output (D35): the cursor's row follows from its id, and only the blocks of the page are read. */
async function storedPage(
  deps: OutputItemsDeps,
  runId: string,
  base: string,
  stored: StoredOutput,
  after: string | null,
  limit: number,
  live: boolean,
): Promise<OutputItemList> {
  let from = 0;
  if (after !== null) {
    const row = offsetOf(base, after) - stored.idOffset;
    if (row < 0 || row >= stored.count || idAtOffset(base, stored.idOffset + row) !== after)
      throw unknownCursor(after);
    from = row + 1;
  }
  const items: OutputItem[] = [];
  for await (const item of storedItems(deps.collections, runId, base, stored, from, live))
    if (items.push(item) > limit) break;
  return page(items.slice(0, limit), items.length > limit);
}

/** The results file's formats: JSON Lines (`application/x-ndjson`, exact) or CSV (`text/csv`, api/runs/output-csv.ts). */
export type ResultsFormat = 'ndjson' | 'csv';

/**
 * D35: every item of output `key`, in order, as the results file (`Accept: application/x-ndjson`
 * or `text/csv`). The run, the key and the caller are checked before the first item, so a
 * refusal is still a JSON error; then items are read a block (or a chunk, or a page of a live run)
 * at a time.
 */
export async function outputItemLines(
  deps: OutputItemsDeps,
  accountId: string,
  runId: string,
  key: string,
  format: ResultsFormat = 'ndjson',
): Promise<AsyncIterable<string>> {
  const lines = format === 'csv' ? itemCsv : itemLines;
  // A stored output's JSON Lines are written straight from its pages, without parsing its items.
  const storedLines = (itemIdBase: string, stored: StoredOutput, live: boolean) =>
    format === 'csv'
      ? itemCsv(storedItems(deps.collections, runId, itemIdBase, stored, 0, live))
      : storedItemLines(deps.collections, runId, itemIdBase, stored, 0, live);
  // A finished run's pages are read as they go: a run deleted meanwhile (D39) takes the rest with
  // it, and the file must not then end as if complete (the answer is cut instead).
  const untilDeleted = (pieces: AsyncIterable<string>) =>
    whileRunExists(pieces, () => findRunHead(deps.collections, accountId, runId));
  let doc = await headOf(deps, accountId, runId);
  if (!doc.finalized) {
    const first = await deps.gateway.outputPage(runId, key, null, 1_000);
    if (first) {
      if (first.value === null) throw unknownOutput(key);
      const value = first.value;
      if (value.stored && value.itemIdBase)
        return storedLines(value.itemIdBase, value.stored, !value.ended);
      return lines(livePages(deps, runId, key, value.items, value.has_more));
    }
    // No news from the workflow: it may have just ended, its record written meanwhile; else an
    // empty file would be a wrong answer, so the caller is asked to retry.
    doc = await headOf(deps, accountId, runId);
    if (!doc.finalized)
      throw new ServiceUnavailableError('The run did not answer in time. Retry shortly.');
  }
  const stored = storedOutput(doc, key);
  if (stored && doc.item_id_base) return untilDeleted(storedLines(doc.item_id_base, stored, false));
  await checkOutputKey(deps, doc, key);
  return untilDeleted(lines(recordItems(deps, doc, key)));
}

/** `pieces`, then an error when the run is gone by their end (the download is cut, not ended). */
async function* whileRunExists(
  pieces: AsyncIterable<string>,
  find: () => Promise<RunDoc | null>,
): AsyncGenerator<string> {
  yield* pieces;
  if (!(await find())) throw new Error('the run was deleted while its results were read');
}

/**
 * 404 for a key that is no output of the finished run. A completed run's record names them all;
 * one that did not complete may have no items (D9), so its workflow version says which keys
 * exist (a version deleted since, D39, cannot: the key is then taken as given, with no items).
 */
async function checkOutputKey(deps: OutputItemsDeps, doc: RunDoc, key: string): Promise<void> {
  if (Object.hasOwn(doc.output ?? {}, key)) return;
  if (doc.status === 'completed') throw unknownOutput(key);
  const keys = await versionOutputKeys(deps.collections, doc.published_workflow_version_id);
  if (keys && !keys.includes(key)) throw unknownOutput(key);
}

async function* recordItems(
  deps: OutputItemsDeps,
  doc: RunDoc,
  key: string,
): AsyncGenerator<OutputItem> {
  yield* ownItems(doc.output ?? {}, key);
  for await (const chunk of chunksOf(deps.collections, doc)) yield* ownItems(chunk.output, key);
}

async function* livePages(
  deps: OutputItemsDeps,
  runId: string,
  key: string,
  first: OutputItem[],
  more: boolean,
): AsyncGenerator<OutputItem> {
  let items = first;
  let hasMore = more;
  for (;;) {
    yield* items;
    const last = items.at(-1);
    if (!hasMore || !last) return;
    const next = await deps.gateway.outputPage(runId, key, last.id, 1_000);
    items = next?.value?.items ?? [];
    hasMore = next?.value?.has_more ?? false;
  }
}

/** Items as JSON Lines, in pieces of ~64 KB (one write each). */
export function itemLines(items: AsyncIterable<OutputItem>): AsyncGenerator<string> {
  return inPieces(items, (item) => `${JSON.stringify(item)}\n`);
}

function page(data: OutputItem[], hasMore: boolean): OutputItemList {
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
  };
}

function unknownOutput(key: string): NotFoundError {
  return new NotFoundError(`The run has no output \`${key.slice(0, 64)}\`.`);
}

function unknownCursor(after: string): InvalidRequestError {
  return new InvalidRequestError(`\`starting_after\` ${after} is not an item of this output.`, {
    param: 'starting_after',
  });
}
