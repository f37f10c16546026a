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

/** One message naming every problem, e.g. "Invalid inputs: `a` is required; `b` must be a number". */
export function describeProblems(problems: readonly Problem[], heading = 'Invalid inputs'): string {
  return `${heading}: ${problems.map((p) => `\`${p.field}\` ${p.problem}`).join('; ')}`;
}
