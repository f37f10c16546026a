/**
 * D31/D35: the rows of an uploaded file, read as a stream with bounded memory. A file holds a JSON
 * array, JSON Lines or CSV (a header row, then one object per row); the format follows the file's
 * name and type, else its first byte. Only the row being parsed (and the caller's batch) is held,
 * whatever the file's size, and a row longer than `maxRowChars` (a row of a big list is stored 100
 * to a page of one document, domain/item-blocks.ts) is refused as soon as it is, never buffered
 * whole. A malformed file throws RowsError naming the line.
 */
import { parse as parseCsv } from 'csv-parse';
import { Readable } from 'node:stream';
import { JsonTooDeep, parseJsonWithin } from '../../domain/json-depth';

export type RowsFormat = 'json' | 'jsonl' | 'csv';

/** The file does not parse (or holds too many rows): `line` is 1-based. */
export class RowsError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
    this.name = 'RowsError';
  }
}

/** The format a file's name or MIME type says, if any. */
export function formatOf(name: string, mime: string): RowsFormat | undefined {
  const lower = name.toLowerCase();
  if (lower.endsWith('.csv') || mime === 'text/csv') return 'csv';
  if (/\.(jsonl|ndjson)$/.test(lower) || /ndjson|jsonl/.test(mime)) return 'jsonl';
  if (lower.endsWith('.json') || mime === 'application/json') return 'json';
  return undefined;
}

/** Rows of a text stream, one at a time; throws RowsError past `maxRows`, at a row past `maxRowChars` or at the first malformed line. */
export async function* readRows(
  source: AsyncIterable<Buffer | string>,
  format: RowsFormat | undefined,
  maxRows: number,
  maxRowChars = Infinity,
): AsyncGenerator<unknown> {
  const text = decode(source);
  // The first chunk; where nothing names the format, up to the first line's end (or its first
  // LONG_FIRST_CHUNK characters), which decides it.
  let head = '';
  for (let lineEnded = false; !lineEnded && head.length < LONG_FIRST_CHUNK;) {
    const next = await text.next();
    if (next.done) break;
    head += next.value;
    lineEnded = format !== undefined || /[\r\n]/.test(next.value);
  }
  if (head === '') return;
  const chars = prepend(head, text);
  const kind = format ?? guessFormat(head);
  let count = 0;
  const rows =
    kind === 'json'
      ? jsonArray(chars, maxRowChars)
      : kind === 'jsonl'
        ? jsonLines(chars, maxRowChars)
        : csv(chars, maxRowChars);
  for await (const { row, line } of rows) {
    if (++count > maxRows)
      throw new RowsError(`the file has more than ${maxRows} rows, the limit of a list`, line);
    yield row;
  }
}

/**
 * A file whose name and type say nothing: `[` opens a JSON array, `{` a JSON Lines object; a first
 * line that is a whole JSON value (`"a"`, `12`, `true`) is JSON Lines too, and any other is a CSV
 * header: `name,First Name`, `"First Name",x` and `2024,2025` are CSVs although they begin as JSON
 * could (they were read as JSON Lines, and failed, when the first character decided).
 */
function guessFormat(head: string): RowsFormat {
  const text = head.trimStart();
  const lead = text[0] ?? '';
  if (lead === '[') return 'json';
  if (lead === '{') return 'jsonl';
  if (!/["\d\-tfn]/.test(lead)) return 'csv';
  const end = text.search(/\r?\n/);
  try {
    JSON.parse(end === -1 ? text : text.slice(0, end));
    return 'jsonl';
  } catch {
    // No line end in the first LONG_FIRST_CHUNK characters: a JSON Lines row may go on past them.
    return end === -1 && head.length >= LONG_FIRST_CHUNK ? 'jsonl' : 'csv';
  }
}

/** How much of a first line guessFormat reads: past it, a long row that could be JSON Lines is taken as such. */
const LONG_FIRST_CHUNK = 16 * 1024;

async function* decode(source: AsyncIterable<Buffer | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8');
  let started = false;
  for await (const chunk of source) {
    let s = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    if (!started && s.length > 0) {
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1); // a byte order mark
      started = true;
    }
    if (s) yield s;
  }
  const rest = decoder.decode();
  if (rest) yield rest;
}

async function* prepend(head: string, rest: AsyncGenerator<string>): AsyncGenerator<string> {
  yield head;
  yield* rest;
}

interface Row {
  row: unknown;
  line: number;
}

function tooLong(line: number, maxRowChars: number): RowsError {
  return new RowsError(
    `line ${line}: the row is longer than ${maxRowChars} characters, the most one row of a list holds`,
    line,
  );
}

function parseAt(text: string, line: number): unknown {
  try {
    return parseJsonWithin(text);
  } catch (err) {
    const why = err instanceof JsonTooDeep ? `the row ${err.message}` : (err as Error).message;
    throw new RowsError(`line ${line}: ${why}`, line);
  }
}

async function* jsonLines(chars: AsyncIterable<string>, maxRowChars: number): AsyncGenerator<Row> {
  let carry = '';
  let line = 0;
  for await (const chunk of chars) {
    const parts = (carry + chunk).split('\n');
    carry = parts.pop()!;
    for (const text of parts) {
      line++;
      if (text.length > maxRowChars) throw tooLong(line, maxRowChars);
      if (text.trim()) yield { row: parseAt(text, line), line };
    }
    if (carry.length > maxRowChars) throw tooLong(line + 1, maxRowChars);
  }
  line++;
  if (carry.trim()) yield { row: parseAt(carry, line), line };
}

/** A top-level JSON array, cut into its elements by a scanner (strings, escapes, nesting), each parsed alone. */
async function* jsonArray(chars: AsyncIterable<string>, maxRowChars: number): AsyncGenerator<Row> {
  let line = 1;
  let state: 'open' | 'first' | 'before' | 'value' | 'end' = 'open';
  let depth = 0;
  let inString = false;
  let escaped = false;
  let element = '';
  let elementLine = 1;
  const fail = (what: string): never => {
    throw new RowsError(`line ${line}: ${what}`, line);
  };
  for await (const chunk of chars) {
    let start = 0; // where the open element's text begins in this chunk
    for (let i = 0; i < chunk.length; i++) {
      const ch = chunk[i];
      if (ch === '\n') line++;
      if (state === 'value') {
        if (inString) {
          if (escaped) escaped = false;
          else if (ch === '\\') escaped = true;
          else if (ch === '"') inString = false;
        } else if (ch === '"') inString = true;
        else if (ch === '[' || ch === '{') depth++;
        else if (depth > 0 && (ch === ']' || ch === '}')) depth--;
        else if (depth === 0 && (ch === ',' || ch === ']')) {
          element += chunk.slice(start, i);
          if (element.length > maxRowChars) throw tooLong(elementLine, maxRowChars);
          yield { row: parseAt(element, elementLine), line: elementLine };
          element = '';
          state = ch === ',' ? 'before' : 'end';
        }
        continue;
      }
      if (ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n') continue;
      if (state === 'open') {
        if (ch !== '[') fail(`expected '[' but found '${ch}'`);
        state = 'first';
      } else if (state === 'first' && ch === ']') {
        state = 'end';
      } else if (state === 'first' || state === 'before') {
        if (ch === ',' || ch === ']') fail(`unexpected '${ch}'`);
        state = 'value';
        elementLine = line;
        start = i;
        depth = 0;
        inString = false;
        escaped = false;
        i--; // scan this character as the value's first
      } else {
        fail(`unexpected '${ch}' after the end of the array`);
      }
    }
    if (state === 'value') element += chunk.slice(start);
    if (element.length > maxRowChars) throw tooLong(elementLine, maxRowChars);
  }
  if ((state as string) !== 'end') fail('the array is not closed');
}

/** CSV with a header row: one object per row, by csv-parse (quoting, embedded newlines, BOM). */
async function* csv(chars: AsyncIterable<string>, maxRowChars: number): AsyncGenerator<Row> {
  const parser = Readable.from(chars).pipe(
    parseCsv({
      columns: true,
      skip_empty_lines: true,
      info: true,
      ...(Number.isFinite(maxRowChars) ? { max_record_size: maxRowChars } : {}),
    }),
  );
  try {
    for await (const record of parser as AsyncIterable<{
      record: Record<string, string>;
      info: { lines: number };
    }>)
      yield { row: record.record, line: record.info.lines };
  } catch (err) {
    const line = (err as { lines?: number }).lines ?? 0;
    throw new RowsError(`line ${line}: ${(err as Error).message}`, line);
  }
}
