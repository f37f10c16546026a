// Type rules for input values, shared by run inputs (D4) and User Input defaults checked
// at publish time, so a default can never be a value a caller could not send.
import type { InputType } from './graph';
import { isId } from './ids';
import { unstorableJsonProblems } from './storable-json';

// The scheme policy (https only, private addresses) is enforced where files are fetched (D19).
const ABSOLUTE_HTTP_URL = /^https?:\/\/[^\s/?#]+(?:[/?#]\S*)?$/i;

/** True for `{...}` objects (prototype Object or null), not arrays, dates or class instances. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** True for values JSON can carry: null, booleans, finite numbers, strings, arrays and plain objects. */
export function isJsonValue(value: unknown): boolean {
  // Iterative so that deeply nested bodies cannot overflow the stack; `seen` stops cycles.
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v === 'string' || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return false;
      continue;
    }
    if (Array.isArray(v) || isPlainObject(v)) {
      if (seen.has(v)) return false;
      seen.add(v);
      for (const item of Object.values(v)) stack.push(item);
      continue;
    }
    return false;
  }
  return true;
}

/** True for a `file_...` id or an absolute http(s) URL. */
export function isFileReference(value: unknown): value is string {
  return typeof value === 'string' && (isId('file', value) || ABSOLUTE_HTTP_URL.test(value));
}

/** Why `value` is not acceptable for an input of `type` ("must be a string" ...), or undefined if it is. */
export function inputValueProblem(type: InputType, value: unknown): string | undefined {
  switch (type) {
    case 'text':
      return typeof value === 'string' ? undefined : 'must be a string';
    case 'number':
      if (typeof value !== 'number') return 'must be a number';
      // JSON.parse makes a number past 1.8e308 Infinity.
      return Number.isFinite(value) ? undefined : 'must be a finite number';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be a boolean';
    case 'json': {
      if (!isJsonValue(value)) return 'must be a JSON value';
      const [bad] = unstorableJsonProblems(value, [], 1);
      return bad ? `contains \`${bad.field}\`, which ${bad.problem}` : undefined;
    }
    case 'image':
    case 'video':
    case 'file':
      return isFileReference(value) ? undefined : 'must be a `file_...` id or an http(s) URL';
  }
}
