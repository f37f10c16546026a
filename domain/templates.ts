// `{{ name }}` placeholders: they are both the input ports of templated nodes and the
// substitution syntax at run time, so one regex serves both. A placeholder may reach into its
// port's JSON value (a CSV row's column, a field of a JSON Lines row): `{{ row.name }}`,
// `{{ row.tags.0 }}`, `{{ row["First Name"] }}`; its port is still `row`.

const NAME = '[A-Za-z_][A-Za-z0-9_]*';
/** One step into a value: `.key` (letters, digits, `_`, `-`; digits index an array) or `["any key"]`. */
const STEP = String.raw`\.[A-Za-z0-9_-]+|\[\s*"(?:[^"\\]|\\.)*"\s*\]`;
const PLACEHOLDER = new RegExp(String.raw`\{\{\s*(${NAME})((?:${STEP})*)\s*\}\}`, 'g');
const STEPS = new RegExp(STEP, 'g');

/** What a placeholder renders: its port's value, or (with a path) a value inside it; '' for none. */
export type TemplateLookup = (port: string, path: readonly string[]) => string;

/** The distinct placeholder names (input ports) of a template, in order of first appearance. */
export function placeholders(template: string): string[] {
  const seen = new Set<string>();
  for (const m of template.matchAll(PLACEHOLDER)) seen.add(m[1]);
  return [...seen];
}

/** How many placeholders a template holds (each one looked up and copied whenever it is filled). */
export function placeholderUses(template: string): number {
  return Array.from(template.matchAll(PLACEHOLDER)).length;
}

/** The keys of a placeholder's steps: `.a["b c"].0` → ['a', 'b c', '0']. */
function pathOf(steps: string): string[] {
  return [...steps.matchAll(STEPS)].map(([step]) =>
    step.startsWith('.') ? step.slice(1) : (JSON.parse(step.slice(1, -1).trim()) as string),
  );
}

/**
 * A template whose filled text would pass its bound: thrown before that text is built, so a few
 * placeholders repeated over a large value cannot make a string the process cannot hold.
 */
export class TemplateTooLarge extends Error {
  constructor(readonly maxLength: number) {
    super(`the filled template would pass ${maxLength} characters, the most it may hold`);
    this.name = 'TemplateTooLarge';
  }
}

/**
 * Replaces every placeholder with what `values` gives for it: a lookup, or plain texts by port
 * (a placeholder with a path renders empty then). A missing value renders as the empty string.
 * Throws TemplateTooLarge as soon as the filled text would pass `maxLength` characters.
 */
export function renderTemplate(
  template: string,
  values: TemplateLookup | Record<string, string>,
  maxLength = Infinity,
): string {
  const lookup: TemplateLookup =
    typeof values === 'function'
      ? values
      : // Own properties only: `{{constructor}}` must not render Object.prototype.constructor.
        (port, path) =>
          path.length === 0 && Object.prototype.hasOwnProperty.call(values, port)
            ? String(values[port])
            : '';
  const { literals, holes } = compiled(template);
  const pieces: string[] = [];
  let length = 0;
  for (let i = 0; i < holes.length; i++) {
    const value = lookup(holes[i].port, holes[i].path);
    length += literals[i].length + value.length;
    if (length > maxLength) throw new TemplateTooLarge(maxLength);
    pieces.push(literals[i], value);
  }
  const tail = literals[holes.length];
  if (length + tail.length > maxLength) throw new TemplateTooLarge(maxLength);
  pieces.push(tail);
  return pieces.join('');
}

/** How many placeholders a filled template looks up: its parse's, kept with it (no scan of its own). */
export function filledPlaceholders(template: string): number {
  return compiled(template).holes.length;
}

/** A template parsed once: the literal text around each placeholder (one more than the holes). */
interface CompiledTemplate {
  literals: string[];
  holes: Array<{ port: string; path: string[] }>;
}

/**
 * Templates parsed once, not at each fill: a row of a node whose 999 placeholders each reach down
 * a path of 438 steps took 44 ms to parse again, 128 rows of it a whole workflow task. Templates of
 * 8 MiB in all are kept (a few runs' nodes'); the parse is pure, so which are kept changes no outcome.
 */
const COMPILED = new Map<string, CompiledTemplate>();
const COMPILED_MAX_CHARS = 8 * 1024 * 1024;
let compiledChars = 0;

function compiled(template: string): CompiledTemplate {
  let found = COMPILED.get(template);
  if (!found) {
    found = { literals: [], holes: [] };
    let at = 0;
    for (const m of template.matchAll(PLACEHOLDER)) {
      found.literals.push(template.slice(at, m.index));
      found.holes.push({ port: m[1], path: m[2] ? pathOf(m[2]) : [] });
      at = m.index + m[0].length;
    }
    found.literals.push(template.slice(at));
    if (compiledChars + template.length > COMPILED_MAX_CHARS) {
      COMPILED.clear();
      compiledChars = 0;
    }
    COMPILED.set(template, found);
    compiledChars += template.length;
  }
  return found;
}

/**
 * Fills the templates of one request (a prompt and its system message, a URL, headers and body)
 * within one bound in all: the request throws TemplateTooLarge naming it.
 */
export function templateFiller(
  values: TemplateLookup,
  maxLength: number,
): (template: string) => string {
  let left = maxLength;
  return (template) => {
    try {
      const text = renderTemplate(template, values, left);
      left -= text.length;
      return text;
    } catch (err) {
      throw err instanceof TemplateTooLarge ? new TemplateTooLarge(maxLength) : err;
    }
  };
}
