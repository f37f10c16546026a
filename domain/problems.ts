// One shape for every "what is wrong where" list: D4 input problems and D26 publishing
// problems both become `details` entries of an invalid-request error.

export type Problem = {
  /** Where: an input key, or a JSON path such as `nodes[3].label`. */
  field: string;
  /** What: read after the field name, e.g. "is required". */
  problem: string;
};

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Renders a path such as `['nodes', 3, 'label']` as `nodes[3].label` (`root` for the root itself). */
export function formatPath(path: readonly PropertyKey[], root = 'workflow'): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && IDENTIFIER.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out === '' ? root : out;
}

/** Where a value sits in a walk: its key and its parent's place (a linked list, so a deep walk copies no paths). */
export type Place = { key: PropertyKey; parent: Place | undefined } | undefined;

/** The keys from the root to `place`, after `at` (where the walked value itself sits). */
export function pathOf(place: Place, at: readonly PropertyKey[] = []): PropertyKey[] {
  const keys: PropertyKey[] = [];
  for (let p = place; p; p = p.parent) keys.push(p.key);
  return [...at, ...keys.reverse()];
}

/** The most problems a message names; `details` has up to DETAIL_PROBLEMS. */
export const MESSAGE_PROBLEMS = 10;

/**
 * The most entries `details` holds. A 1 MiB body of 100,000 bad metadata keys was answered with
 * 11 MB of `details`, built on the API's one thread (and 1,200 such requests a minute fit a key's
 * rate): a caller fixes the first hundred problems before it needs the next.
 */
export const DETAIL_PROBLEMS = 100;

/** At most DETAIL_PROBLEMS problems, the last of them saying how many more there were. */
export function boundedProblems<P extends Problem>(problems: P[]): P[] {
  if (problems.length <= DETAIL_PROBLEMS) return problems;
  const kept = problems.slice(0, DETAIL_PROBLEMS);
  const last = kept[DETAIL_PROBLEMS - 1];
  const more = problems.length - DETAIL_PROBLEMS;
  kept[DETAIL_PROBLEMS - 1] = {
    ...last,
    problem: `${last.problem} (and ${more} more problems, not listed)`,
  };
  return kept;
}

/**
 * One message naming the first problems, e.g. "Invalid inputs: `a` is required; `b` must be a
 * number". Past MESSAGE_PROBLEMS it says how many more `details` holds: a body of thousands of
 * bad fields must not get an answer repeating each of them twice.
 */
export function describeProblems(problems: readonly Problem[], heading = 'Invalid inputs'): string {
  const named = problems.slice(0, MESSAGE_PROBLEMS).map((p) => `\`${p.field}\` ${p.problem}`);
  const more = problems.length - named.length;
  const where =
    problems.length > DETAIL_PROBLEMS
      ? `\`details\` lists the first ${DETAIL_PROBLEMS}`
      : 'see `details`';
  return `${heading}: ${named.join('; ')}${more > 0 ? `; and ${more} more (${where})` : ''}`;
}
