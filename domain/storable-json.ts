// What the document store cannot hold. Free-form JSON that callers send (builder `meta`, User
// Input `default`s, batch `rows`, llm `schema`, model `input`, http_request `headers`, json run
// inputs) is stored as sent, and FerretDB 1.x refuses keys that start with `$` or contain `.`
// and arrays directly inside arrays, while BSON cannot carry a NUL in a key at all. Such a value
// is refused up front (an invalid request naming where it is), instead of failing the insert with a 500.
// Run outputs and event logs, which nodes produce and no caller can be asked to fix, are stored as
// JSON text instead (store/documents.ts, StoredRunDoc); storing graphs and inputs that way too
// would lift these limits and retire this module.
import { formatPath, pathOf, type Place, type Problem } from './problems';

/** What is wrong with a key, read after it ("starts with `$`"), or undefined if it can be stored. */
export function unstorableKeyReason(key: string): string | undefined {
  if (key.startsWith('$')) return 'starts with `$`';
  if (key.includes('.')) return 'contains `.`';
  if (key.includes('\u0000')) return 'contains a NUL character';
  return undefined;
}

const NESTED_ARRAY =
  'is an array directly inside an array, which the store cannot hold (wrap it in an object)';

/** Problems for every unstorable key or nested array inside `value` (at most `limit`), each at its path below `at`. */
export function unstorableJsonProblems(
  value: unknown,
  at: readonly PropertyKey[] = [],
  limit = 20,
): Problem[] {
  const problems: Problem[] = [];
  const report = (place: Place, problem: string) =>
    problems.push({ field: formatPath(pathOf(place, at)), problem }) >= limit;
  // Iterative: bodies nest up to the JSON depth limit, and a walk must not overflow the stack.
  const stack: Array<[unknown, Place]> = [[value, undefined]];
  while (stack.length > 0 && problems.length < limit) {
    const [current, place] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    const children: Array<[unknown, Place]> = [];
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const item: unknown = current[i];
        if (!Array.isArray(item)) children.push([item, { key: i, parent: place }]);
        else if (report({ key: i, parent: place }, NESTED_ARRAY)) break;
      }
    } else {
      for (const [key, child] of Object.entries(current)) {
        const reason = unstorableKeyReason(key);
        if (!reason) children.push([child, { key, parent: place }]);
        else if (report({ key, parent: place }, `is a key the store cannot hold: it ${reason}`))
          break;
      }
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return problems;
}
