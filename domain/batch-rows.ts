/**
 * The `batch` node's rows from its `rows` port (NODES.md): each input item gives the rows of its
 * parts (a json part's array, a text part's JSON array or else its non-empty lines, a file part's
 * link). Taken item by item, so a batch of a stored list (D35, activities/stored-lists.ts) never
 * holds the list; the workflow's inline batch (workflows/pure-nodes.ts) reads the same way.
 */
import type { Item, Part } from './parts';
import { depthExceeds, PARSED_JSON_MAX_DEPTH } from './json-depth';

/** Why an input item gives no rows: the batch fails with it, naming the node. */
export class BatchRowsProblem extends Error {
  override readonly name = 'BatchRowsProblem';
}

/** A text's JSON array nested deeper than rows may be (PARSED_JSON_MAX_DEPTH). */
export class BatchRowsTooDeep extends BatchRowsProblem {}

/**
 * The rows one input item of the `rows` port gives, in order; a BatchRowsProblem when it gives
 * none. A text's JSON array nested deeper than `maxDepth` is refused: JSON.parse reads 5,000
 * levels, but what walks them later (the run's end, its payloads) overflowed the stack, and the
 * run never ended.
 */
export function rowsOfItem(
  item: Item,
  maxDepth = PARSED_JSON_MAX_DEPTH,
  limit = Infinity,
): unknown[] {
  if (item.status === 'failed')
    throw new BatchRowsProblem(`rows input failed: ${item.error?.message ?? 'unknown error'}`);
  const rows: unknown[] = [];
  for (const part of item.parts)
    for (const row of rowsOfPart(part, maxDepth, limit - rows.length)) rows.push(row);
  return rows;
}

/** A part's rows; a text's lines only up to one past `limit` (the caller fails a list past it). */
function rowsOfPart(part: Part, maxDepth: number, limit: number): unknown[] {
  if (part.type === 'json') {
    if (!Array.isArray(part.data))
      throw new BatchRowsProblem('rows input is JSON but not an array');
    return part.data;
  }
  if (part.type === 'text') {
    const trimmed = part.text.trim();
    if (trimmed.startsWith('[')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(trimmed);
      } catch {
        // not JSON after all: its lines
      }
      if (Array.isArray(parsed)) {
        if (depthExceeds(parsed, maxDepth))
          throw new BatchRowsTooDeep(`rows input is JSON nested deeper than ${maxDepth} levels`);
        return parsed;
      }
    }
    return limit === Infinity
      ? part.text.split(/\r?\n/).filter((line) => line.trim() !== '')
      : nonBlankLines(part.text, limit + 1);
  }
  return [part.url];
}

/**
 * A text's non-blank lines (split at `\n` or `\r\n`), at most `most` of them: what a split and a
 * filter give, without splitting the rest (one text of 2,720,000 lines split by five batches
 * held a workflow task 2.1 s).
 */
function nonBlankLines(text: string, most: number): string[] {
  const lines: string[] = [];
  for (let start = 0; start <= text.length && lines.length < most;) {
    const newline = text.indexOf('\n', start);
    const end = newline === -1 ? text.length : newline;
    const line = text.slice(start, newline > start && text[end - 1] === '\r' ? end - 1 : end);
    if (line.trim() !== '') lines.push(line);
    start = end + 1;
  }
  return lines;
}
