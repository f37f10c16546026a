/**
 * How deep a JSON value may nest, how many values its text may hold, and what JSON text can say
 * that its parsed value cannot carry.
 * Values from outside (a request's body, a file's rows, a provider's or a server's JSON answer) are
 * checked before anything walks them: the API's walkers, JSON.stringify and the payload converter
 * recurse, and a value nested 60,000 deep (120 KB of brackets) overflowed the stack of whatever
 * touched it first, failing a whole node after five attempts instead of its one item. And
 * `"\ud800"` (an unpaired surrogate) or `1e999` (Infinity once parsed) parse, then change silently:
 * UTF-8 makes the one U+FFFD, JSON the other `null`.
 */

import { pathOf, type Place } from './problems';

/** The deepest a value the worker parses (a file's row, a JSON answer) may nest. */
export const PARSED_JSON_MAX_DEPTH = 64;

/**
 * The most values (objects, arrays, scalars) a JSON text the worker parses may hold. A parsed
 * value takes up to ~20 times its text (`[{},{},…]`: a provider's 16 MiB answer grew the worker's
 * heap by 1.2 GB and blocked its thread for 6 s); at this bound it takes at most ~50 MB, and no
 * answer of a model or API spoken here comes near it (a prediction's streamed tokens: one value a
 * token).
 */
export const PARSED_JSON_MAX_VALUES = 250_000;

/** A JSON text or value outside one of the bounds above; its message reads after "the answer". */
export class JsonOutOfBounds extends Error {}

/** A parsed value that nests deeper than its bound. */
export class JsonTooDeep extends JsonOutOfBounds {
  constructor(readonly maxDepth: number) {
    super(`nests deeper than ${maxDepth} levels`);
    this.name = 'JsonTooDeep';
  }
}

/** A JSON text of more values than its bound. */
export class JsonTooWide extends JsonOutOfBounds {
  constructor(readonly maxValues: number) {
    super(`holds more than ${maxValues} values`);
    this.name = 'JsonTooWide';
  }
}

const CLOSERS = new Set([0x5d, 0x7d]); // `]`, `}`

/**
 * True when a JSON text holds more than `max` values, counted before parsing from its commas and
 * opening brackets outside strings (a value is at least one character, and a comma or bracket
 * apart from the next, so a text shorter than twice the bound is not scanned at all).
 */
export function jsonValuesExceed(text: string, max: number): boolean {
  if (text.length <= 2 * max) return false;
  let values = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) i = closingQuote(text, i);
    else if (c === 0x2c || ((c === 0x5b || c === 0x7b) && !CLOSERS.has(text.charCodeAt(i + 1)))) {
      if (++values > max) return true; // a comma starts one more value, a non-empty `[` or `{` its first
    }
  }
  return false;
}

/** Where the string opened at `open` ends (a quote after an even run of backslashes), found by indexOf: an image's megabytes of base64 are skipped at memchr's speed. */
function closingQuote(text: string, open: number): number {
  for (let at = text.indexOf('"', open + 1); at >= 0; at = text.indexOf('"', at + 1)) {
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 0) return at;
  }
  return text.length;
}

/** Iterative (no recursion, so no stack overflow on hostile input) depth check. */
export function depthExceeds(value: unknown, maxDepth: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > maxDepth) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}

/** JsonTooWide past PARSED_JSON_MAX_VALUES, JSON.parse (a SyntaxError as it throws one), then JsonTooDeep past `maxDepth`. */
export function parseJsonWithin(text: string, maxDepth = PARSED_JSON_MAX_DEPTH): unknown {
  if (jsonValuesExceed(text, PARSED_JSON_MAX_VALUES)) throw new JsonTooWide(PARSED_JSON_MAX_VALUES);
  const value: unknown = JSON.parse(text);
  if (depthExceeds(value, maxDepth)) throw new JsonTooDeep(maxDepth);
  return value;
}

/** What in a parsed value would not survive being stored or written out as it was read. */
export interface Unfaithful {
  /** The key path to it (`[]`: the value itself). */
  path: PropertyKey[];
  problem: 'unpaired_surrogate' | 'infinite_number';
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The first key or string holding an unpaired UTF-16 surrogate, or, with `numbers`, the first
 * number JSON.parse made infinite (past ±1.8e308); undefined if there is none. Iterative, as
 * depthExceeds.
 */
export function unfaithfulJson(value: unknown, opts: { numbers: boolean }): Unfaithful | undefined {
  // Places, not paths: a value with nothing wrong (every file row) copies no path.
  const stack: Array<[unknown, Place]> = [[value, undefined]];
  while (stack.length > 0) {
    const [current, place] = stack.pop()!;
    if (typeof current === 'string') {
      if (LONE_SURROGATE.test(current))
        return { path: pathOf(place), problem: 'unpaired_surrogate' };
      continue;
    }
    if (typeof current === 'number') {
      if (opts.numbers && !Number.isFinite(current))
        return { path: pathOf(place), problem: 'infinite_number' };
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    for (const [key, child] of Object.entries(current)) {
      const childPlace = { key: Array.isArray(current) ? Number(key) : key, parent: place };
      if (LONE_SURROGATE.test(key))
        return { path: pathOf(childPlace), problem: 'unpaired_surrogate' };
      stack.push([child, childPlace]);
    }
  }
  return undefined;
}
