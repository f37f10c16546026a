// Turns zod issues into D26 `details` entries whose `problem` reads after the field name
// ("`nodes[3].label` is required"), instead of zod's developer-facing messages.
import type { z } from 'zod';
import { formatPath, type Problem } from './problems';

type Issue = z.core.$ZodIssue & { input?: unknown };

const code = (s: string) => `\`${s}\``;

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    case 'object':
      return 'an object';
    default:
      return typeof value;
  }
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  record: 'an object',
};

function bound(
  issue: { origin: string; inclusive?: boolean },
  n: number | bigint,
  small: boolean,
): string {
  const limit = Number(n);
  switch (issue.origin) {
    case 'string':
      if (small && limit === 1) return 'must not be empty';
      return `must have ${small ? 'at least' : 'at most'} ${limit} characters`;
    case 'array':
      if (small && limit === 1) return 'must have at least one entry';
      return `must have ${small ? 'at least' : 'at most'} ${limit} entries`;
    default: {
      const op = small ? (issue.inclusive ? '≥' : '>') : issue.inclusive ? '≤' : '<';
      return `must be ${op} ${limit}`;
    }
  }
}

function describe(issue: Issue): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      if (issue.expected === 'int' && typeof issue.input === 'number') return 'must be an integer';
      // A coerced query value that is no number arrives as NaN, a JSON number past 1.8e308 as
      // Infinity: "must be a number, not a number" would contradict itself.
      if (typeof issue.input === 'number' && !Number.isFinite(issue.input))
        return Number.isNaN(issue.input)
          ? `must be ${EXPECTED[issue.expected] ?? issue.expected}`
          : 'must be a finite number';
      return `must be ${EXPECTED[issue.expected] ?? issue.expected}, not ${kindOf(issue.input)}`;
    case 'invalid_union':
      if ('discriminator' in issue && issue.discriminator !== undefined) {
        const options = ((issue as { options?: unknown[] }).options ?? []).map((o) =>
          code(String(o)),
        );
        const given = (issue.input as Record<string, unknown> | undefined)?.[issue.discriminator];
        const head =
          given === undefined ? 'is required' : `${code(String(given))} is not a known type`;
        return `${head} (one of ${options.join(', ')})`;
      }
      // A union given a message of its own (`z.union([...], { error })`) says what it takes.
      return issue.message.startsWith('Invalid')
        ? 'matches none of the allowed forms'
        : issue.message;
    case 'invalid_key': {
      // A record's key: what the key's own check says (the metadata key pattern, D37).
      const inner = (issue as { issues?: Issue[] }).issues?.[0];
      return `is not a valid key${inner ? `: ${describe(inner)}` : ''}`;
    }
    case 'invalid_value':
      return `must be ${issue.values.length === 1 ? '' : 'one of '}${issue.values.map((v) => code(String(v))).join(', ')}`;
    case 'too_small':
      return bound(issue, issue.minimum, true);
    case 'too_big':
      return bound(issue, issue.maximum, false);
    case 'invalid_format':
      // Our regexes carry predicate messages; zod's own formats get a generic one.
      return issue.format === 'regex' && !issue.message.startsWith('Invalid')
        ? issue.message
        : `must be a valid ${issue.format}`;
    case 'custom':
      return issue.message;
    default:
      return issue.message;
  }
}

/** What a parsed value is, for the problems of its root: its name as a field, and as an owner of fields. */
export interface ProblemSubject {
  /** The field name of the value itself ("`body` must be an object"). */
  root: string;
  /** The value as the owner of its unknown keys ("`x` is not a field of the request body"). */
  owner: string;
}

/** A workflow document (D26), the default subject. */
const WORKFLOW_SUBJECT: ProblemSubject = { root: 'workflow', owner: 'a workflow' };

/**
 * zod's `int()` checks the safe integer range before the schema's own bounds: for a `limit` of
 * 1e20 it reports "≤ 9007199254740991" first, where the bound that means something is `max(100)`.
 */
function isSafeRangeIssue(issue: Issue): boolean {
  if (issue.code !== 'too_big' && issue.code !== 'too_small') return false;
  const n = Number(issue.code === 'too_big' ? issue.maximum : issue.minimum);
  return issue.origin === 'int' && Math.abs(n) === Number.MAX_SAFE_INTEGER;
}

/**
 * One problem per zod issue (unknown keys: one per key), at most one per field, in issue order; a
 * safe-integer bound only when the field has no other problem.
 */
export function zodIssuesToProblems(
  issues: readonly z.core.$ZodIssue[],
  subject: ProblemSubject = WORKFLOW_SUBJECT,
): Problem[] {
  const problems: Problem[] = [];
  const seen = new Set<string>();
  const add = (field: string, problem: string) => {
    if (seen.has(field)) return;
    seen.add(field);
    problems.push({ field, problem });
  };
  const path = (p: readonly PropertyKey[]) => formatPath(p, subject.root);
  const bounded = new Set(
    (issues as readonly Issue[]).filter((i) => !isSafeRangeIssue(i)).map((i) => path(i.path)),
  );
  for (const issue of issues as readonly Issue[]) {
    if (isSafeRangeIssue(issue) && bounded.has(path(issue.path))) continue;
    if (issue.code === 'unrecognized_keys') {
      const type = (issue.input as { type?: unknown } | undefined)?.type;
      const owner =
        typeof type === 'string'
          ? `${code(type)} nodes`
          : issue.path.length === 0
            ? subject.owner
            : issue.path[0] === 'edges' && issue.path.length === 2
              ? 'an edge'
              : 'this object';
      for (const key of issue.keys) add(path([...issue.path, key]), `is not a field of ${owner}`);
    } else {
      add(path(issue.path), describe(issue));
    }
  }
  return problems;
}
