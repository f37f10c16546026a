/**
 * Pages of stored items (domain/item-blocks.ts, D35), read by `_id` alone. A page is written by
 * the one activity that owns its rows: inserted once when complete (an insert is the cheap write
 * on FerretDB 1.x, where a replace of a large document was measured to cost ~0.3–1.3 s and grow
 * with the collection); a page left incomplete by an attempt that stops is replaced by `_id`.
 * Two attempts of one block can be alive at once (`mergePages`), so a block's writes merge.
 * Rows are JSON text for the same reason run outputs are (store/documents.ts StoredRunDoc), kept
 * compressed (raw deflate, level 1: ~1 ms for a page of 2 KB answers) because FerretDB's cost of
 * handing a page over grows with its bytes, and a compressed Binary costs it the least. Inside, a
 * page is one line per row, `<cost>[,<calls>,<input tokens>,<output tokens>] <item JSON>` (an empty
 * line: not finished; the usage only where the row made a call, D36), the item's JSON
 * with the keys of the API's item: the results file splices it into its line as it is, which
 * spared the export a JSON.parse of the page and a JSON.stringify per item (~4 of its ~5 ms of
 * Node's work per page of 2 KB answers).
 *
 * D38: a re-run references its parent's rows instead of copying them. A row it carries over is the
 * line `^` in its own page, and the page names its `base` (the parent run): every reader here
 * resolves such a line to the base page's row of the same position, as `^ <item JSON>` (billed
 * nothing, no usage). A base row that is gone (the parent was deleted, D39, or expired, D29) or
 * not completed resolves to an empty line: the row is not readable through the re-run either.
 * A base page may itself carry rows (a re-run of a re-run): resolved the same way, one read a level.
 */
import { promisify } from 'node:util';
import { deflateRaw, inflateRaw } from 'node:zlib';
import { Binary, type AnyBulkWriteOperation } from 'mongodb';
import { pageId, type StoredOutput, type StoredRow } from '../domain/item-blocks';
import { IdSequence } from '../domain/ids';
import type { OutputItem } from '../domain/run';
import type { Collections } from './db';
import type { ItemBlockDoc } from './documents';

type C = Pick<Collections, 'itemBlocks'>;

const deflate = promisify(deflateRaw);
const inflate = promisify(inflateRaw);

/** One page to write: its rows by position (null: not finished), and D38's base of its carried rows. */
export interface PageWrite {
  page: number;
  rows: Array<StoredRow | null>;
  /** The parent run whose page holds the rows marked `carried` (required when there are any). */
  base?: string;
}

/** D38: the stored line of a row carried over by reference; resolved, it reads `^ <item JSON>`. */
const CARRIED = '^';

async function toDoc(
  runId: string,
  nodeId: string,
  { page, rows, base }: PageWrite,
): Promise<ItemBlockDoc> {
  const carries = rows.some((row) => row?.carried);
  if (carries && !base)
    throw new Error(`page ${page} of node ${nodeId} carries rows but names no base`);
  return {
    _id: pageId(runId, nodeId, page),
    run_id: runId,
    node_id: nodeId,
    page,
    rows_z: new Binary(await deflate(packRows(rows), { level: 1 })),
    ...(carries ? { base } : {}),
    created_at: new Date(),
  };
}

/** The item as the API shows it (status, parts, error), as JSON: what a results-file line ends with. */
function itemJson({ status, parts, error }: StoredRow['item']): string {
  return JSON.stringify({ status, parts, ...(error ? { error } : {}) });
}

/**
 * Rows as lines `<cost>[,<usage>] <item JSON>` (usage: calls, tokens in and out, then failed calls if any), an empty line for a row not finished (JSON text
 * has no raw newline), `^` for a row carried over by reference (D38).
 */
function packRows(rows: Array<StoredRow | null>): string {
  return rows
    .map((row) =>
      !row
        ? ''
        : row.carried
          ? CARRIED
          : `${[row.cost, ...(row.u ?? [])].join(',')} ${itemJson(row.item)}`,
    )
    .join('\n');
}

/** A stored page's lines (`packRows`); a page of rows as a JSON array (written before) is read too. */
async function linesOf(doc: ItemBlockDoc): Promise<string[]> {
  const text = doc.rows_z ? (await inflate(doc.rows_z.buffer)).toString() : null;
  if (text !== null && !text.startsWith('[')) return text.split('\n');
  const rows = JSON.parse(text ?? doc.rows_json ?? '[]') as Array<StoredRow | null>;
  return packRows(rows).split('\n');
}

/**
 * D38: a page's lines with each carried line (`^`) replaced by its base page's row as `^ <item
 * JSON>`, or by an empty line when that row is gone or not completed (see the header).
 */
async function resolvedLines(c: C, doc: ItemBlockDoc): Promise<string[]> {
  const lines = await linesOf(doc);
  if (!doc.base || !lines.includes(CARRIED)) return lines;
  const baseDoc = await c.itemBlocks.findOne({ _id: pageId(doc.base, doc.node_id, doc.page) });
  const base = baseDoc ? await resolvedLines(c, baseDoc) : [];
  return lines.map((line, k) => (line === CARRIED ? carriedLine(base[k]) : line));
}

/** The base row `line` as a carried one (`^ <item JSON>`), or '' unless it is a completed row. */
function carriedLine(line: string | undefined): string {
  if (!line) return '';
  const json = line.slice(line.indexOf(' ') + 1);
  return json.startsWith('{"status":"completed"') ? `${CARRIED} ${json}` : '';
}

function rowOf(line: string): StoredRow | null {
  if (!line) return null;
  const space = line.indexOf(' ');
  if (line.startsWith(CARRIED))
    return { cost: 0, item: JSON.parse(line.slice(space + 1)) as StoredRow['item'], carried: true };
  const [cost, calls, input, output, failed] = line.slice(0, space).split(',').map(Number);
  const u: StoredRow['u'] =
    failed !== undefined ? [calls, input, output, failed] : [calls, input, output];
  return {
    cost,
    item: JSON.parse(line.slice(space + 1)) as StoredRow['item'],
    ...(calls !== undefined ? { u } : {}),
  };
}

async function rowsOf(c: C, doc: ItemBlockDoc): Promise<Array<StoredRow | null>> {
  return (await resolvedLines(c, doc)).map(rowOf);
}

/**
 * Inserts pages in one round trip and answers those already there, left as they are: for a list
 * written in row order (store/page-writer.ts) that is a retry writing the same page; a block's
 * writes merge them instead (`mergePages`).
 */
export async function insertPages(
  c: C,
  runId: string,
  nodeId: string,
  pages: PageWrite[],
): Promise<PageWrite[]> {
  if (pages.length === 0) return [];
  try {
    await c.itemBlocks.insertMany(
      await Promise.all(pages.map((page) => toDoc(runId, nodeId, page))),
      { ordered: false },
    );
    return [];
  } catch (err) {
    const errors = (
      err as { writeErrors?: Array<{ code?: number; index?: number }> | { code?: number } }
    ).writeErrors;
    const list: Array<{ code?: number; index?: number }> = Array.isArray(errors)
      ? errors
      : errors
        ? [errors]
        : [];
    const duplicatesOnly =
      list.length > 0
        ? list.every((e) => e.code === 11000)
        : (err as { code?: unknown }).code === 11000;
    if (!duplicatesOnly) throw err;
    // Each error names the page it refused; without the names, any of them may be there.
    const at = list.map((e) => e.index);
    return list.length > 0 && at.every((i) => i !== undefined && pages[i] !== undefined)
      ? at.map((i) => pages[i!])
      : pages;
  }
}

/** Writes (or overwrites) pages by `_id` in one round trip. */
export async function replacePages(
  c: C,
  runId: string,
  nodeId: string,
  pages: PageWrite[],
): Promise<void> {
  if (pages.length === 0) return;
  const docs = await Promise.all(pages.map((page) => toDoc(runId, nodeId, page)));
  const ops: AnyBulkWriteOperation<ItemBlockDoc>[] = docs.map((doc) => ({
    replaceOne: { filter: { _id: doc._id }, replacement: doc, upsert: true },
  }));
  await c.itemBlocks.bulkWrite(ops, { ordered: false });
}

/** A row of a page write whose stored copy was kept instead (`mergePages`). */
export interface KeptRow {
  page: number;
  /** The row's position in its page. */
  position: number;
  /** The stored copy is the written row, byte for byte. */
  same: boolean;
}

/**
 * Writes a block's pages over what is stored (activities/node-block.ts): two attempts of one block
 * can be alive at once (an operator's reset runs the block anew while the old execution's attempt
 * runs on until its heartbeat finds it gone; a stalled worker's attempt outlives its heartbeat
 * timeout), each writing the same pages, and neither may drop the other's rows. A stored page
 * keeps its finished rows and takes this write's rows where it has none; it is replaced only when
 * that adds rows (a page not there is written as given). Answers whether a stored page held rows
 * this write lacks or holds otherwise (`foreign`, another attempt's): then the stored pages, not
 * the writer's rows, are what is readable and billed. `kept`: every row of this write whose
 * stored copy was kept instead (by page and position in it), whatever the copy holds; `same`: the
 * copy is this write's row as it is. Which of them are another attempt's is for the writer to
 * tell (activities/node-block.ts, by the rows it stored itself): comparing content cannot, as
 * two attempts of a deterministic model store identical rows, and then the kept copy's usage
 * counts the other attempt's calls, not this one's (D36). Every other row of this write is in
 * the store as given.
 *
 * The race left: FerretDB does not isolate concurrent updates of one document, and the read and
 * the replace are two round trips, so two attempts merging one page at the same moment may each
 * read it before the other's replace, and the later replace drops the rows the earlier one added.
 * An insert that finds the page merges only after the other attempt's write of it, so this needs
 * both attempts to write, at the same moment, a page they found stored when they started (or one
 * to write a page again after a failed write).
 */
export async function mergePages(
  c: C,
  runId: string,
  nodeId: string,
  pages: PageWrite[],
): Promise<{ foreign: boolean; kept: KeptRow[] }> {
  let foreign = false;
  const kept: KeptRow[] = [];
  const writes = await Promise.all(
    pages.map(async (write): Promise<PageWrite | null> => {
      const doc = await c.itemBlocks.findOne({ _id: pageId(runId, nodeId, write.page) });
      if (!doc) return write;
      const stored = await rowsOf(c, doc);
      const rows = Array.from(
        { length: Math.max(stored.length, write.rows.length) },
        (_, k) => stored[k] ?? write.rows[k] ?? null,
      );
      const line = (row: StoredRow | null | undefined) => (row ? packRows([row]) : '');
      stored.forEach((row, k) => {
        if (!row) return;
        const same = line(row) === line(write.rows[k]);
        if (!same) foreign = true;
        if (write.rows[k]) kept.push({ page: write.page, position: k, same });
      });
      const count = (list: Array<StoredRow | null>) => list.filter((row) => row).length;
      // D38: the stored page's carried rows keep its base (a block's attempts share one).
      return count(rows) > count(stored) ? { ...write, rows, base: write.base ?? doc.base } : null;
    }),
  );
  await replacePages(
    c,
    runId,
    nodeId,
    writes.filter((write): write is PageWrite => write !== null),
  );
  return { foreign, kept };
}

/** One page's rows (carried ones resolved, D38), or null when nothing of it was written yet. */
export async function readPage(
  c: C,
  runId: string,
  nodeId: string,
  page: number,
): Promise<Array<StoredRow | null> | null> {
  const doc = await c.itemBlocks.findOne({ _id: pageId(runId, nodeId, page) });
  return doc && rowsOf(c, doc);
}

/** D38: whether a run stored any page of a node's first rows (its first page), by `_id`. */
export async function hasFirstPage(c: C, runId: string, nodeId: string): Promise<boolean> {
  const doc = await c.itemBlocks.findOne(
    { _id: pageId(runId, nodeId, 0) },
    { projection: { _id: 1 } },
  );
  return doc !== null;
}

/**
 * Pages read ahead of the one handed out (each a round trip of its own, in parallel over the
 * connection pool): FerretDB works on several at once, so a reader rarely waits for one. Eight
 * stay well inside the pool (16 connections on FerretDB) and hold a few MB at most.
 */
const READ_AHEAD = 8;

/**
 * A stored output's pages from the one holding row `from` on, in order, each with its lines
 * (`packRows`; null: nothing written yet), `READ_AHEAD` of them read while one is handed out.
 */
async function* pagesFrom(
  c: C,
  runId: string,
  stored: StoredOutput,
  from: number,
): AsyncGenerator<{ first: number; end: number; lines: string[] | null }> {
  const size = stored.pageRows;
  const last = Math.ceil(stored.count / size);
  let next = Math.floor(from / size);
  const ahead: Array<{ page: number; lines: Promise<string[] | null> }> = [];
  const fill = () => {
    while (ahead.length < READ_AHEAD && next < last) {
      const page = next++;
      const lines = c.itemBlocks
        .findOne({ _id: pageId(runId, stored.node, page) })
        .then((doc) => doc && resolvedLines(c, doc));
      lines.catch(() => undefined); // awaited in turn; an early return must not leave it unhandled
      ahead.push({ page, lines });
    }
  };
  fill();
  while (ahead.length > 0) {
    const { page, lines: pending } = ahead.shift()!;
    const lines = await pending;
    fill();
    yield { first: page * size, end: Math.min((page + 1) * size, stored.count), lines };
  }
}

/**
 * A stored output's items from row `from` on, in order, a few pages in memory at a time (the next
 * ones are read while one is handed out): rows not finished are skipped, or `running` while live.
 */
export async function* storedItems(
  c: C,
  runId: string,
  itemIdBase: string,
  stored: StoredOutput,
  from: number,
  live: boolean,
): AsyncGenerator<OutputItem> {
  const ids = new IdSequence(itemIdBase);
  for await (const { first, end, lines } of pagesFrom(c, runId, stored, from)) {
    for (let k = Math.max(first, from); k < end; k++) {
      const row = rowOf(lines?.[k - first] ?? '');
      const id = ids.at(stored.idOffset + k);
      if (row) {
        const { status, parts, error } = row.item;
        yield { id, item_index: k, status, parts, ...(error ? { error } : {}) };
      } else if (live) yield { id, item_index: k, status: 'running', parts: [] };
    }
  }
}

/**
 * D35's results file straight from the pages: the JSON Lines of a stored output's items from row
 * `from` on, in order, one piece per page (the `/outputs/{key}` item of each row, byte for byte:
 * `{"id":…,"item_index":…,` and the stored item's JSON), read ahead like `storedItems`; rows not
 * finished are skipped, or `running` while live.
 */
export async function* storedItemLines(
  c: C,
  runId: string,
  itemIdBase: string,
  stored: StoredOutput,
  from: number,
  live: boolean,
): AsyncGenerator<string> {
  const ids = new IdSequence(itemIdBase);
  for await (const { first, end, lines } of pagesFrom(c, runId, stored, from)) {
    let piece = '';
    for (let k = Math.max(first, from); k < end; k++) {
      const line = lines?.[k - first];
      const head = `{"id":"${ids.at(stored.idOffset + k)}","item_index":${k},`;
      if (line) piece += `${head}${line.slice(line.indexOf(' ') + 2)}\n`;
      else if (live) piece += `${head}"status":"running","parts":[]}\n`;
    }
    if (piece) yield piece;
  }
}
