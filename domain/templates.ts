// `{{ name }}` placeholders: they are both the input ports of templated nodes and the
// substitution syntax at run time, so one regex serves both.

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** The distinct placeholder names of a template, in order of first appearance. */
export function placeholders(template: string): string[] {
  const seen = new Set<string>();
  for (const m of template.matchAll(PLACEHOLDER)) seen.add(m[1]);
  return [...seen];
}

/** Replaces every `{{ name }}` with `values[name]`; a missing value renders as the empty string. */
export function renderTemplate(template: string, values: Record<string, string>): string {
  return template.replace(PLACEHOLDER, (_m, key: string) =>
    // Own properties only: `{{constructor}}` must not render Object.prototype.constructor.
    Object.prototype.hasOwnProperty.call(values, key) ? String(values[key]) : '',
  );
}
