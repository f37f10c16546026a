/**
 * Request and response schemas of the public API: the single source of request validation,
 * of the TypeScript types (z.infer) and of the OpenAPI document.
 */
import { z } from 'zod';
import { type ProblemSubject, zodIssuesToProblems } from '../../domain/zod-problems';
import { describeProblems, type Problem } from '../../domain/problems';
import { InvalidRequestError } from '../../domain/errors';
import { RUN_PRIORITIES } from '../../domain/run-priority';
import { MAX_COST_USD } from '../../domain/run-hold';
import type { IdPrefix } from '../../domain/ids';
import { EVENT_CURSOR } from './http-schemas';

/** D37: how many metadata keys a run may carry, and how long a value may be. */
export const METADATA_MAX_KEYS = 16;
export const METADATA_MAX_VALUE = 512;
/** D37: a metadata key, 1–64 letters, digits, `_`, `-`, `.`. */
const METADATA_KEY = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * D37: the caller's own key/value pairs on a run (order ids, customer ids), returned on every
 * read of it. `__proto__` fits the characters, but JSON parsing makes it an own key that zod's
 * record (like any object built by assignment) silently drops: refused, never lost unseen.
 */
export const MetadataSchema = z.preprocess(
  (raw, ctx) => {
    if (raw && typeof raw === 'object' && Object.hasOwn(raw, '__proto__'))
      ctx.addIssue({
        code: 'custom',
        message: 'is a reserved key',
        path: ['__proto__'],
        input: raw,
      });
    return raw;
  },
  z
    .record(
      z.string().regex(METADATA_KEY, 'keys are 1–64 letters, digits, `_`, `-` or `.`'),
      z
        .string()
        .max(METADATA_MAX_VALUE, `values are strings of at most ${METADATA_MAX_VALUE} characters`),
    )
    .refine((m) => Object.keys(m).length <= METADATA_MAX_KEYS, {
      message: `at most ${METADATA_MAX_KEYS} keys`,
    })
    .meta({
      maxProperties: METADATA_MAX_KEYS,
      description: `D37: at most ${METADATA_MAX_KEYS} keys of 1–64 letters, digits, \`_\`, \`-\`, \`.\`; string values of at most ${METADATA_MAX_VALUE} characters.`,
    }),
);
export type Metadata = z.infer<typeof MetadataSchema>;

/** What a `version` may be, for the answer to one that is neither. */
const VERSION_FORMS = 'must be a version number (1, 2, …) or a version id (`wfv_…`)';

/** Fields whose problems carry their own error `code` (docs/api.md "Errors"), whatever else is wrong. */
const FIELD_CODES = new Map([
  ['metadata', 'invalid_metadata'], // D37
  ['webhook', 'invalid_webhook'], // D20: as start-run's checks of the scheme and address answer
]);

export const StartRequestSchema = z
  .object({
    workflowId: z
      .string()
      .min(1)
      .max(256)
      .describe('A published workflow id (`wf_...`) or an API slug of your account (D2).'),
    version: z
      .union([z.int().positive(), z.string().max(64).regex(/^wfv_/, VERSION_FORMS)], {
        error: VERSION_FORMS,
      })
      .optional()
      .describe(
        'Pins a published version: its number or its `wfv_...` id (D1). Absent: the latest version.',
      ),
    stream: z.boolean().default(false).describe('`true` answers with a Server-Sent Events stream.'),
    inputs: z
      .unknown()
      .optional()
      .describe('Values keyed by the normalized User Input labels (D4).'),
    webhook: z
      .url({ protocol: /^https?$/, error: 'must be an https:// URL' })
      .max(2048)
      .optional()
      .describe(
        'D20: an `https://` URL that receives the run record (as GET /api/v1/runs/{runId} answers it) by POST when the run ends, ' +
          'signed the Standard Webhooks way with your account’s `whsec_` secret (headers `webhook-id`, `webhook-timestamp`, `webhook-signature`). ' +
          'Retried with backoff for 24 hours; redirects are not followed; private and loopback addresses are refused.',
      ),
    max_cost: z
      .number()
      .positive()
      .max(MAX_COST_USD)
      .optional()
      .describe(
        `D36: the most this run may cost, in USD (the start fee included; at least the start fee, at most ${MAX_COST_USD}). ` +
          'Before each unit of work the run budgets its worst case; when the next would pass the cap it starts no more, lets what is in flight finish, and ends `failed` with an error saying the cost limit was reached. `total_cost` never exceeds it; finished items stay readable and are the only ones billed.',
      ),
    timeout_seconds: z
      .int()
      .min(1)
      .optional()
      .describe(
        "D36: the run ends `failed` (an error saying it timed out) this many seconds after it started, its provider calls in flight cancelled; finished items stay readable and are billed. At most the operator's maximum run duration (3600 by default).",
      ),
    priority: z
      .enum(RUN_PRIORITIES)
      .optional()
      .describe(
        'D36: the order in which your account’s waiting work is taken: `high` before `normal` (the default) before `low`. Other accounts’ work is shared fairly whatever the priority.',
      ),
    metadata: MetadataSchema.optional().describe(
      `D37: your own key/value pairs (at most ${METADATA_MAX_KEYS} keys of 1–64 letters, digits, \`_\`, \`-\`, \`.\`; string values of at most ${METADATA_MAX_VALUE} characters), returned on the run and its webhook, and searchable with \`GET /api/v1/runs?metadata[key]=value\`.`,
    ),
  })
  .strict();
export type StartRequest = z.infer<typeof StartRequestSchema>;

/** D38: `POST /api/v1/runs/{runId}/rerun`. */
export const RerunRequestSchema = z
  .object({
    items: z
      .enum(['failed', 'all'])
      .default('all')
      .describe(
        '`failed`: only the failed items of each list node (and what depends on them) run again, completed items are carried over; `all`: the whole run again.',
      ),
    stream: z.boolean().default(false).describe('`true` answers with a Server-Sent Events stream.'),
  })
  .strict();
export type RerunRequest = z.infer<typeof RerunRequestSchema>;

export const AsyncStartResponseSchema = z.object({
  run_id: z.string(),
  status: z.literal('pending'),
  published_workflow_id: z.string(),
  published_workflow_version_id: z.string(),
  created_at: z.iso.datetime(),
});
export type AsyncStartResponse = z.infer<typeof AsyncStartResponseSchema>;

/** An ISO 8601 time: a date-time with `Z` or an offset, or a date (its midnight UTC). */
const isoTime = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()], {
    error:
      'must be an ISO 8601 date-time with `Z` or an offset (2026-01-31T12:00:00Z), or a date (2026-01-31)',
  })
  .transform((text) => new Date(text));

/**
 * A query number as people write one: `z.coerce.number` alone reads `0x2`, `2e0`, `0b10` and
 * ` 2` as 2. Any other spelling is no number (`must be a number`); the schema is `schema`'s.
 */
function decimal<T extends z.ZodType>(schema: T) {
  return z.preprocess(
    (value) => (typeof value === 'string' && !/^-?\d+(?:\.\d+)?$/.test(value) ? 'NaN' : value),
    schema,
  );
}

/** D23's cursor pagination, newest first: a page size and the id of the last item seen. */
function pageFields(prefix: IdPrefix, what: string, description: string) {
  return {
    limit: decimal(z.coerce.number().int().min(1).max(100).default(20)),
    starting_after: z
      .string()
      .regex(new RegExp(`^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`), `must be ${what}`)
      .optional()
      .describe(description),
  };
}

/**
 * D23, D37: the query of GET /api/v1/runs (cursor pagination, newest first; every filter AND-ed).
 * `metadata[<key>]=<value>` arrives as flat query keys; they are gathered into `metadata` first.
 */
export const ListRunsQueryFieldsSchema = z
  .object({
    ...pageFields('run', 'a run id', 'Return runs older than this one.'),
    status: z.enum(['pending', 'running', 'completed', 'failed', 'cancelled']).optional(),
    workflow_id: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe('A `wf_...` id or a slug of your account.'),
    workflowId: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe('The older spelling of `workflow_id`; when both are given, runs must match both.'),
    created_after: isoTime
      .optional()
      .describe('Only runs created after this time (ISO 8601, e.g. `2026-01-31T12:00:00Z`).'),
    created_before: isoTime.optional().describe('Only runs created before this time (ISO 8601).'),
    metadata: MetadataSchema.optional()
      .describe(
        'D37: `metadata[<key>]=<value>`, once per key: only runs whose metadata has every one of these pairs.',
      )
      .meta({ param: { style: 'deepObject', explode: true } }),
  })
  .strict();
/** The fields above, once the `metadata[<key>]` query keys are gathered (the OpenAPI document lists the fields). */
export const ListRunsQuerySchema = z.preprocess(gatherMetadataFilters, ListRunsQueryFieldsSchema);

/** Moves `metadata[<key>]` query keys into one `metadata` object (D37); anything else stays as it is. */
function gatherMetadataFilters(raw: unknown): unknown {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  const out: Record<string, unknown> = {};
  const metadata: [string, unknown][] = [];
  for (const [name, value] of Object.entries(raw)) {
    const key = /^metadata\[(.*)\]$/s.exec(name)?.[1];
    if (key === undefined) out[name] = value;
    else metadata.push([key, value]);
  }
  // A plain `metadata` key as well: left as it came, for the schema to refuse.
  if (metadata.length === 0 || 'metadata' in out) return raw;
  return { ...out, metadata: Object.fromEntries(metadata) };
}
export type ListRunsQuery = z.infer<typeof ListRunsQuerySchema>;

/** D31: the query of GET /api/v1/runs/{runId}/outputs/{key}. */
export const OutputItemsQuerySchema = z
  .object({
    limit: decimal(z.coerce.number().int().min(1).max(1000).default(100)).describe(
      'Items per page (1–1,000).',
    ),
    starting_after: z
      .string()
      .regex(/^item_[0-9A-HJKMNP-TV-Z]{26}$/, 'must be an item id')
      .optional()
      .describe('Return the items after this one.'),
  })
  .strict();
export type OutputItemsQuery = z.infer<typeof OutputItemsQuerySchema>;

/**
 * The query of GET /api/v1/runs/{runId}: `include_output=false` reads the run without its items
 * (`output: null`), as a list shows it. A finished big run's answer holds every item (D31), which
 * can be hundreds of MB; a caller that pages them (the playground) asks for the rest alone.
 * Unknown parameters are ignored, as they were before this one existed (cache busters).
 */
export const ReadRunQuerySchema = z.object({
  include_output: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true')
    .describe(
      '`false` answers the run with `output: null`: read its items with `/outputs/{key}` pages or the results file.',
    ),
});
export type ReadRunQuery = z.infer<typeof ReadRunQuerySchema>;

/** D35: the results file (the same URL, asked for as JSON Lines or CSV) is every item: it takes no page's query. */
export const ResultsFileQuerySchema = z.object({}).strict();

/**
 * D11: the query of GET /api/v1/runs/{runId}/stream. `Last-Event-ID` wins over `starting_after`,
 * but a malformed `starting_after` is refused even then: a request is valid or not on its own.
 */
export const StreamQuerySchema = z
  .object({
    starting_after: z
      .string()
      .regex(EVENT_CURSOR, 'must be an event sequence number (a non-negative integer)')
      .optional()
      .describe(
        'Resume after this event (its `sequence_number`); `Last-Event-ID` wins when both are sent.',
      ),
  })
  .strict();

/** D34: the longest a stream link works, and the optional body of POST /api/v1/runs/{runId}/stream-link. */
export const MAX_STREAM_LINK_SECONDS = 3_600;

export const StreamLinkRequestSchema = z
  .object({
    ttl_seconds: z
      .number()
      .int()
      .min(1)
      .max(MAX_STREAM_LINK_SECONDS)
      .default(MAX_STREAM_LINK_SECONDS)
      .describe('How long the link works, in seconds (at most 3600, the default).'),
  })
  .strict();

/** D30: the query of GET /api/v1/workflows (cursor pagination like D23, newest first). */
export const ListWorkflowsQuerySchema = z
  .object(pageFields('wf', 'a workflow id', 'Return workflows published before this one.'))
  .strict();
export type ListWorkflowsQuery = z.infer<typeof ListWorkflowsQuerySchema>;

/** D19: the query of GET /api/v1/files. */
export const ListFilesQuerySchema = z
  .object(pageFields('file', 'a file id', 'Return files uploaded before this one.'))
  .strict();
export type ListFilesQuery = z.infer<typeof ListFilesQuerySchema>;

/** D24: the query of GET /api/v1/workflows/{workflowId}. */
export const ContractQuerySchema = z
  .object({
    version: z
      .union(
        [
          // Digits only: `1e0`, `0x1` and `01` are no version numbers, as in a start's body.
          z
            .string()
            .regex(/^[1-9]\d{0,8}$/)
            .transform(Number),
          z.string().max(64).regex(/^wfv_/, VERSION_FORMS),
        ],
        {
          error: VERSION_FORMS,
        },
      )
      .optional(),
  })
  .strict();

/** What a request value is called where its problems name it (`body` must be an object). */
const SUBJECTS = {
  request: { root: 'body', owner: 'the request body' },
  query: { root: 'query', owner: 'the query' },
} as const satisfies Record<string, ProblemSubject>;

/** Parses a request value with a schema, or throws a 400 naming every problem (one `details` entry each). */
export function parseRequest<T extends z.ZodType>(
  schema: T,
  value: unknown,
  what: keyof typeof SUBJECTS = 'request',
): z.infer<T> {
  // A query parameter given twice (`?limit=1&limit=2`) arrives as a list, which no query field
  // takes: said as such, instead of what coercing the list would make of it.
  if (what === 'query') {
    const query = value as Record<string, unknown>;
    const repeated = Object.keys(query).filter((key) => Array.isArray(query[key]));
    if (repeated.length > 0)
      refuse(
        repeated.map((field) => ({ field, problem: 'is given more than once' })),
        what,
      );
  }
  // Most reads send no query: its parse (the schema's defaults) is the same every time.
  const empty = what === 'query' && Object.keys(value as object).length === 0;
  if (empty && EMPTY_QUERIES.has(schema)) return EMPTY_QUERIES.get(schema) as z.infer<T>;
  // reportInput: without the offending value zod-problems cannot tell "missing" from "wrong type",
  // and would answer `"stream": "yes"` with "is required".
  const result = schema.safeParse(value, { reportInput: true });
  if (!result.success) refuse(zodIssuesToProblems(result.error.issues, SUBJECTS[what]), what);
  // Frozen: every request shares it.
  if (empty) EMPTY_QUERIES.set(schema, Object.freeze(result.data));
  return result.data;
}

/** The parse of an empty query, by schema (parseRequest). */
const EMPTY_QUERIES = new WeakMap<z.ZodType, unknown>();

/** The 400 of a request value's problems. A field with a code of its own (FIELD_CODES) names that code and that field. */
function refuse(details: Problem[], what: keyof typeof SUBJECTS): never {
  const codeOf = (field: string) => FIELD_CODES.get(field.split(/[.[]/)[0]);
  const coded = details.find((d) => codeOf(d.field));
  throw new InvalidRequestError(describeProblems(details, `Invalid ${what}`), {
    param: coded?.field ?? details[0]?.field,
    details,
    ...(coded ? { code: codeOf(coded.field) } : {}),
  });
}
