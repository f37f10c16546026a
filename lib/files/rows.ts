/**
 * D31/D35: the rows of an uploaded file, read as a stream with bounded memory. A file holds a JSON
 * array, JSON Lines or CSV (a header row, then one object per row); the format follows the file's
 * name and type, else its first byte. Only the row being parsed (and the caller's batch) is held,
 * whatever the file's size, and a row longer than `maxRowChars` (a row of a big list is stored 100
 * to a page of one document, domain/item-blocks.ts) is refused as soon as it is, never buffered
 * whole. A malformed file throws RowsError naming the line, and so does anything a file says that
 * would not be kept as it is: bytes that are no UTF-8 (a spreadsheet saved as Windows-1252 would
 * become U+FFFD), a JSON row holding an unpaired surrogate or a number past ±1.8e308 (JSON.parse
 * makes it Infinity, written out as `null`), a CSV header naming a column twice (one value would be
 * dropped).
 */
import { CsvError, parse as parseCsv } from 'csv-parse';
import { pipeline, Readable } from 'node:stream';
import { JsonOutOfBounds, parseJsonWithin, unfaithfulJson } from '../../domain/json-depth';
import { formatPath } from '../../domain/problems';

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
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let started = false;
  let lines = 1; // the line the next text starts on, for a message
  for await (const chunk of source) {
    let s: string;
    try {
      s = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    } catch {
      throw notUtf8(lines + newlinesBeforeInvalid(chunk as Buffer));
    }
    if (!started && s.length > 0) {
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1); // a byte order mark
      started = true;
    }
    lines += newlines(s);
    if (s) yield s;
  }
  let rest: string;
  try {
    rest = decoder.decode();
  } catch {
    throw notUtf8(lines); // the file ends inside a character
  }
  if (rest) yield rest;
}

function notUtf8(line: number): RowsError {
  return new RowsError(
    `line ${line}: the file is not UTF-8 text (save it as UTF-8: in Excel, "CSV UTF-8")`,
    line,
  );
}

function newlines(text: string): number {
  let count = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) count++;
  return count;
}

/** Line ends in `chunk` before its first byte that is no UTF-8 (near enough: a chunk may begin inside a character). */
function newlinesBeforeInvalid(chunk: Buffer): number {
  const text = new TextDecoder('utf-8').decode(chunk);
  const bad = text.indexOf('\ufffd');
  return newlines(bad === -1 ? text : text.slice(0, bad));
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
  let row: unknown;
  try {
    row = parseJsonWithin(text);
  } catch (err) {
    const why = err instanceof JsonOutOfBounds ? `the row ${err.message}` : (err as Error).message;
    throw new RowsError(`line ${line}: ${why}`, line);
  }
  const bad = unfaithfulJson(row, { numbers: true });
  if (bad) {
    const where = bad.path.length === 0 ? 'the row' : `\`${formatPath(bad.path, 'row')}\``;
    const what =
      bad.problem === 'infinite_number'
        ? 'is a number too large to hold (past ±1.8e308)'
        : 'holds an unpaired UTF-16 surrogate escape (`\\ud800`-`\\udfff`), which is no Unicode text';
    throw new RowsError(`line ${line}: ${where} ${what}`, line);
  }
  return row;
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

/**
 * CSV with a header row: one object per row, by csv-parse (quoting, embedded newlines). The objects
 * are built here, not by csv-parse's `columns`, which assigns each value (a `__proto__` column
 * would vanish) and keeps the last of two same-named columns: such a header is refused instead. A
 * column without a name (Excel writes `name,city,,` for formatted blank columns) is left out of
 * the rows, and refused only where a row has a value in it.
 */
async function* csv(chars: AsyncIterable<string>, maxRowChars: number): AsyncGenerator<Row> {
  // pipeline, not pipe: an error of the text (bytes that are no UTF-8, a failed read of the store)
  // must reach the loop below, not be thrown unhandled from the source stream, killing the worker.
  const parser = pipeline(
    Readable.from(Number.isFinite(maxRowChars) ? boundedLines(chars, maxRowChars) : chars),
    parseCsv({
      skip_empty_lines: true,
      info: true,
      ...(Number.isFinite(maxRowChars) ? { max_record_size: maxRowChars } : {}),
    }),
    () => {}, // its error is the parser's, thrown by the loop
  );
  let header: Array<string | undefined> | undefined; // undefined: a column without a name
  try {
    for await (const { record, info } of parser as AsyncIterable<{
      record: string[];
      info: { lines: number };
    }>) {
      if (!header) {
        header = checkedHeader(record, info.lines);
        continue;
      }
      const row: Record<string, string> = {};
      for (let i = 0; i < header.length; i++) {
        const name = header[i];
        if (name === '__proto__')
          // Assigned, it would set the prototype and vanish: a `__proto__` column is a column like any other.
          Object.defineProperty(row, name, {
            value: record[i],
            enumerable: true,
            writable: true,
            configurable: true,
          });
        else if (name !== undefined) row[name] = record[i];
        else if (record[i] !== '')
          throw new RowsError(
            `line ${info.lines}: column ${i + 1} has no name in the header but a value in this row; name it`,
            info.lines,
          );
      }
      yield { row, line: info.lines };
    }
  } catch (err) {
    if (!(err instanceof CsvError)) throw err; // ours, or the read's (retried: no fault of the file)
    const line = (err as { lines?: number }).lines ?? 0;
    throw new RowsError(`line ${line}: ${err.message}`, line);
  }
}

/**
 * The text, refused at a record of more than CSV_LINE_FACTOR times `maxRowChars` characters.
 * csv-parse bounds a record by its values' characters, and empty values have none: a line of 64
 * MB of commas became an array of 64 million empty strings, which its error then copied, and the
 * worker died out of memory (every worker the activity was retried on after it). A row within
 * the bound takes up to five characters of a line for each of its own (a quote written `""`
 * inside quotes, and a comma), and a comma for each empty value: 655,360 characters at the
 * default bound leave room for the widest sheet.
 *
 * A record ends where csv-parse ends it: at the file's line end outside quotes, the first one it
 * meets (`\n`, `\r\n` or `\r`); any other line end is a character of the record. Counting from
 * every line end let one record through: 105 MB of quoted line ends and commas, or commas with a
 * lone `\r` every few hundred in a file of `\n` lines.
 */
async function* boundedLines(chars: AsyncIterable<string>, maxRowChars: number) {
  const most = CSV_LINE_FACTOR * maxRowChars;
  const records = new RecordEnds();
  let line = 1;
  let length = 0; // of the record so far
  const special = /["\r\n]/g; // jumping between them: a test of every character cost ~10% of a parse
  for await (const chunk of chars) {
    for (let at = 0; ;) {
      records.decide(chunk, at);
      special.lastIndex = at;
      const found = special.exec(chunk);
      const end = found ? found.index : chunk.length;
      if (end > at) records.text();
      length += end - at;
      if (length > most) throw tooLong(line, maxRowChars);
      if (!found) break;
      at = end + 1;
      if (found[0] === '\n') line++;
      if (records.ends(found[0])) length = 0;
      else length++;
    }
    yield chunk;
  }
}

/**
 * Which line ends end a CSV record: csv-parse takes the first one outside quotes as the file's.
 * Fed every quote and line end in order (`ends`), whether other characters came between
 * (`text`), and each position after one (`decide`): a first `\r` is the file's ending alone, or
 * with the `\n` right after it (perhaps the next chunk's first character).
 */
class RecordEnds {
  private quoted = false;
  private ending: '\n' | '\r\n' | '\r' | undefined;
  /** The last character was a `\r` outside quotes (a first one: its kind waits for the next). */
  private afterCr = false;
  private undecided = false;

  /** At `at` of `chunk`, right after what `ends` was last given: settles a first `\r`'s kind. */
  decide(chunk: string, at: number): void {
    if (!this.undecided || at >= chunk.length) return;
    this.ending = chunk[at] === '\n' ? '\r\n' : '\r';
    this.undecided = false;
  }

  /** Other characters came since the last quote or line end. */
  text(): void {
    this.afterCr = false;
  }

  /** Whether `c` (a quote or a line end) ends the record. */
  ends(c: string): boolean {
    const afterCr = this.afterCr;
    this.afterCr = false;
    if (c === '"') {
      this.quoted = !this.quoted;
      return false;
    }
    if (this.quoted) return false;
    if (c === '\r') {
      this.afterCr = true;
      if (this.ending === undefined) {
        this.undecided = true; // ends the record either way: alone, or before its `\n`
        return true;
      }
      return this.ending === '\r';
    }
    // A `\n`.
    if (this.ending === undefined) this.ending = '\n';
    return this.ending === '\n' || (this.ending === '\r\n' && afterCr);
  }
}

const CSV_LINE_FACTOR = 5;

/** The header's column names (undefined for an empty one), refused if one is given twice: a row's object holds each name once. */
function checkedHeader(names: string[], line: number): Array<string | undefined> {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) {
      const shown = JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
      throw new RowsError(
        `line ${line}: the header names the column ${shown} twice; give each column its own name`,
        line,
      );
    }
    if (name !== '') seen.add(name);
  }
  return names.map((name) => (name === '' ? undefined : name));
}
