/**
 * How deep a JSON value may nest. Values from outside (a request's body, a file's rows, a
 * provider's or a server's JSON answer) are checked before anything walks them: the API's walkers,
 * JSON.stringify and the payload converter recurse, and a value nested 60,000 deep (120 KB of
 * brackets) overflowed the stack of whatever touched it first, failing a whole node after five
 * attempts instead of its one item.
 */

/** The deepest a value the worker parses (a file's row, a JSON answer) may nest. */
export const PARSED_JSON_MAX_DEPTH = 64;

/** A parsed value that nests deeper than its bound. */
export class JsonTooDeep extends Error {
  constructor(readonly maxDepth: number) {
    super(`nests deeper than ${maxDepth} levels`);
    this.name = 'JsonTooDeep';
  }
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

/** JSON.parse (a SyntaxError as it throws one), then JsonTooDeep past `maxDepth`. */
export function parseJsonWithin(text: string, maxDepth = PARSED_JSON_MAX_DEPTH): unknown {
  const value: unknown = JSON.parse(text);
  if (depthExceeds(value, maxDepth)) throw new JsonTooDeep(maxDepth);
  return value;
}
