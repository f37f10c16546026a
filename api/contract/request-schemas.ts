/**
 * Request and response schemas of the public API: the single source of request validation,
 * of the TypeScript types (z.infer) and of the OpenAPI document.
 */
import { z } from 'zod';
import { zodIssuesToProblems } from '../../domain/zod-problems';
import { describeProblems } from '../../domain/problems';
import { InvalidRequestError } from '../../domain/errors';

export const StartRequestSchema = z
  .object({
    workflowId: z
      .string()
      .min(1)
      .max(256)
      .describe('A published workflow id (`wf_...`) or an API slug of your account (D2).'),
    version: z
      .union([z.int().positive(), z.string().min(1).max(64)])
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
  })
  .strict();
export type StartRequest = z.infer<typeof StartRequestSchema>;

export const AsyncStartResponseSchema = z.object({
  run_id: z.string(),
  status: z.literal('pending'),
  published_workflow_id: z.string(),
  published_workflow_version_id: z.string(),
  created_at: z.iso.datetime(),
});
export type AsyncStartResponse = z.infer<typeof AsyncStartResponseSchema>;

/** D23: the query of GET /api/v1/runs (cursor pagination, newest first). */
export const ListRunsQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    starting_after: z
      .string()
      .regex(/^run_[0-9A-HJKMNP-TV-Z]{26}$/, 'must be a run id')
      .optional()
      .describe('Return runs older than this one.'),
    status: z.enum(['pending', 'running', 'completed', 'failed', 'cancelled']).optional(),
    workflowId: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe('A `wf_...` id or a slug of your account.'),
  })
  .strict();
export type ListRunsQuery = z.infer<typeof ListRunsQuerySchema>;

/** D31: the query of GET /api/v1/runs/{runId}/outputs/{key}. */
export const OutputItemsQuerySchema = z
  .object({
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(100)
      .describe('Items per page (1–1,000).'),
    starting_after: z
      .string()
      .regex(/^item_[0-9A-HJKMNP-TV-Z]{26}$/, 'must be an item id')
      .optional()
      .describe('Return the items after this one.'),
  })
  .strict();
export type OutputItemsQuery = z.infer<typeof OutputItemsQuerySchema>;

/**
 * D11: the query of GET /api/v1/runs/{runId}/stream. `Last-Event-ID` wins over `starting_after`,
 * but a malformed `starting_after` is refused even then: a request is valid or not on its own.
 */
export const StreamQuerySchema = z.object({
  starting_after: z
    .string()
    .regex(/^\d{1,9}$/, 'must be an event sequence number (a non-negative integer)')
    .optional()
    .describe(
      'Resume after this event (its `sequence_number`); `Last-Event-ID` wins when both are sent.',
    ),
});

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
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    starting_after: z
      .string()
      .regex(/^wf_[0-9A-HJKMNP-TV-Z]{26}$/, 'must be a workflow id')
      .optional()
      .describe('Return workflows published before this one.'),
  })
  .strict();
export type ListWorkflowsQuery = z.infer<typeof ListWorkflowsQuerySchema>;

/** D24: the query of GET /api/v1/workflows/{workflowId}. */
export const ContractQuerySchema = z
  .object({
    version: z.union([z.coerce.number().int().positive(), z.string().regex(/^wfv_/)]).optional(),
  })
  .strict();

/** Parses a request value with a schema, or throws a 400 naming every problem (one `details` entry each). */
export function parseRequest<T extends z.ZodType>(
  schema: T,
  value: unknown,
  what = 'request',
): z.infer<T> {
  // reportInput: without the offending value zod-problems cannot tell "missing" from "wrong type",
  // and would answer `"stream": "yes"` with "is required".
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  const details = zodIssuesToProblems(result.error.issues);
  throw new InvalidRequestError(describeProblems(details, `Invalid ${what}`), {
    param: details[0]?.field,
    details,
  });
}
