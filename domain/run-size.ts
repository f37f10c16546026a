/**
 * D31 limits known before a run starts: a list of more rows than a run takes inline would end the
 * run (or its worker) anyway, so a start that clearly carries one is refused at once
 * (`run_too_large`) instead of being billed a start fee for a run that must fail. Rows that only appear while the run works
 * (an llm's list output, a file read by a node) are checked by the run itself.
 */
import type { WorkflowDocument } from './graph';
import { normalizeLabel } from './labels';
import { failed } from './items';
import type { Item } from './parts';

/** Rows per list node and items per output at most (D31). */
export const MAX_ROWS = 1_000_000;

/** Why a list node of `rows` rows fails (`more`: it stopped counting there). */
export function tooManyRows(rows: number, more = false): string {
  return `has ${more ? 'more than ' : ''}${rows} rows; a run takes at most ${MAX_ROWS} per list (D31)`;
}

/**
 * Rows per list given in the request or written in the workflow at most: they are made into items
 * in the run's workflow code, one task, so 480,000 of them (a 1 MiB body of `0,`s) held that task
 * past 5 s, where the SDK's deadlock detector aborts the whole worker. More rows come as a file
 * (D31), read by activities, up to MAX_ROWS.
 */
export const INLINE_MAX_ROWS = 100_000;

/** The batch nodes whose rows are known at start (inline) and number more than INLINE_MAX_ROWS, with their counts. */
export function oversizedBatches(
  graph: WorkflowDocument,
  inputs: Record<string, unknown>,
): Array<{ nodeId: string; rows: number }> {
  const inputKeyOf = new Map(
    graph.nodes.flatMap((n) =>
      n.type === 'user_input' ? [[n.id, normalizeLabel(n.label)] as const] : [],
    ),
  );
  const found: Array<{ nodeId: string; rows: number }> = [];
  for (const node of graph.nodes) {
    if (node.type !== 'batch') continue;
    const feed = graph.edges.find((edge) => edge.to === node.id && edge.port === 'rows');
    let rows: number | undefined = feed ? undefined : node.rows?.length;
    const key = feed && inputKeyOf.get(feed.from);
    if (key !== undefined) rows = countRows(inputs[key]);
    if (rows !== undefined && rows > INLINE_MAX_ROWS) found.push({ nodeId: node.id, rows });
  }
  return found;
}

/** Rows a batch node makes of an input value: an array's elements (also as JSON text), or a text's non-blank lines. */
function countRows(value: unknown): number | undefined {
  if (Array.isArray(value)) return value.length;
  if (typeof value !== 'string') return undefined;
  if (value.trim().startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(value);
      return Array.isArray(parsed) ? parsed.length : undefined;
    } catch {
      return undefined; // not JSON: the run says so
    }
  }
  let lines = 0;
  for (const line of value.split(/\r?\n/)) if (line.trim() !== '') lines++;
  return lines;
}

/**
 * What one run makes in its own workflow code, in all (patch `run-items-bound`): each bound keeps
 * one workflow task well below the 5 s where the SDK's deadlock detector aborts the whole worker.
 * A graph of a few KB reached them: a text node made 300,000 lines that a batch made rows (900,000
 * of them, 0.6 s of one task) and a result held (the worker died), eight batches of one text, one
 * 1 MB input fed to 499 results (54 MB of history: Temporal terminated the run).
 */
export const RUN_INLINE_MAX_ROWS = 1_000_000;
/** The texts a run's batch nodes split into rows (or parse as JSON arrays) in its workflow, in characters. */
export const RUN_BATCH_TEXT_MAX_CHARS = 32 * 1024 * 1024;
/** Output items the run holds itself (a list of more than twice its concurrency keeps its items in the store instead, D35). */
export const RUN_INLINE_MAX_OUTPUT_ITEMS = 200_000;
/** The JSON of the output items the run holds itself; its end writes them into the history again. */
export const RUN_INLINE_MAX_OUTPUT_BYTES = 24 * 1024 * 1024;
/** Output items in all, in the run or in the store: each is an event the run logs twice. */
export const RUN_MAX_OUTPUT_ITEMS = 4_000_000;

/**
 * The items of inline lists the run's nodes read in its workflow, in all (patch `inline-reads-bound`):
 * a `batch`, `join`, `text` or I/O node given a list of n items reads all n there (zips, joins,
 * splits, packs them into blocks), ~100-200 ns each inside the sandbox. RUN_INLINE_MAX_ROWS bounds
 * the rows made, not how often they are read: one list of 100,000 rows (a 600 KB request) fed to
 * 495 batch nodes, or one of 900,000 fed to 20 http_request, 60 text or 60 join nodes, held one
 * workflow task past 5 s and the whole worker aborted.
 */
export const RUN_INLINE_MAX_READS = 2_000_000;

/** Why a node that would read `items` more items of inline lists fails. */
export function inlineReadsSpent(items: number): string {
  return `would read ${items} more items of lists in the run, past the ${RUN_INLINE_MAX_READS} its nodes read there in all (D31): feed a big list to fewer nodes, or give its rows as a file`;
}

/** Why a batch that would make `rows` more rows in the workflow fails. */
export function inlineRowsSpent(rows: number): string {
  return `would make ${rows} more rows in the run, past the ${RUN_INLINE_MAX_ROWS} its batch nodes make there in all (D31); rows from a file are read in the store`;
}

/** Why a batch that would split `chars` more characters of text fails. */
export function batchTextSpent(chars: number): string {
  return `would split ${chars} more characters of text into rows, past the ${RUN_BATCH_TEXT_MAX_CHARS} the batch nodes of one run split in all (D31); rows from a file are read in the store`;
}

/** Why a result that would hold `items` more output items fails (`inRun`: the run's own, else in all). */
export function outputItemsSpent(items: number, inRun: boolean): string {
  return inRun
    ? `would hold ${items} more output items in the run, past the ${RUN_INLINE_MAX_OUTPUT_ITEMS} one run holds itself (D31); a list of more than twice the run's concurrency keeps its items in the store (D35)`
    : `would hold ${items} more output items, past the ${RUN_MAX_OUTPUT_ITEMS} of one run's outputs in all (D31)`;
}

/** An output item past RUN_INLINE_MAX_OUTPUT_BYTES: it fails in place in its result, the run goes on. */
export function outputTooLarge(): Item {
  return failed({
    message: `the output items one run holds itself are at most ${RUN_INLINE_MAX_OUTPUT_BYTES} bytes of JSON in all (D31), and this one is past them`,
    type: 'output_too_large',
  });
}

/**
 * JSON bytes one node call's input may hold (its rows' ports and the node's settings): Temporal
 * refuses an activity input over 2 MB by failing the workflow task, and then terminates the run
 * ("BadScheduleActivityAttributes"), as if from outside, with nothing settled. Four edges of one
 * 600 KB input into an `http_request` made 2.4 MB.
 */
export const MAX_CALL_INPUT_BYTES = 1.5 * 1024 * 1024;

/** The UTF-8 bytes of `text` (no Buffer or TextEncoder needed: workflow code). */
export function utf8Bytes(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c < 0xdc00) {
      bytes += 2; // a surrogate pair: 4 bytes for its 2 units
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** Why a node whose call would take `bytes` of input fails. */
export function callInputTooLarge(bytes: number): string {
  return `a call's input would be ${bytes} bytes of JSON (its row's inputs, one copy for each edge into the node, and the node's settings), past the ${MAX_CALL_INPUT_BYTES} one call takes: feed the node fewer or smaller inputs`;
}
