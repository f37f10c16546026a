/**
 * The shapes of the public API outside JSON bodies, as zod schemas: path, query and header
 * parameters, response headers, the Server-Sent Event framing of a stream, the probes' bodies and
 * the upload bodies. With request-schemas.ts and response-schemas.ts they are everything the
 * OpenAPI document (D25) describes, so no shape in it is written twice.
 */
import { z } from 'zod';

/** A D5 id in a path or query: `<prefix>_` and 26 Crockford base32 characters. */
const idOf = (prefix: string) => z.string().regex(new RegExp(`^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`));

export const RunIdPathSchema = z.object({ runId: idOf('run') });
export const FileIdPathSchema = z.object({ fileId: idOf('file') });

export const RunOutputPathSchema = z.object({
  runId: idOf('run'),
  key: z.string().describe('The normalized label of a User Result (a key of `output`).'),
});

export const WorkflowIdPathSchema = z.object({
  workflowId: z.string().describe('A `wf_...` id or a slug.'),
});

/** The query of a signed link (D19 files, D34 stream links): its expiry and its signature over `what`, the expiry and the key. */
export const signedLinkQuerySchema = (what: string) =>
  z.object({
    expires: z.string().regex(/^\d+$/).describe('Unix seconds.'),
    kid: z
      .string()
      .regex(/^key_[A-Za-z0-9_-]{1,64}$/)
      .optional()
      .describe(
        'The API key the link was made for (D6): signed with the rest; once that key is revoked the link is 403 `key_revoked`.',
      ),
    sig: z.string().describe(`HMAC-SHA256 of ${what}, expiry and key (when named).`),
  });

/** D18: 1 to 255 visible ASCII characters (no spaces, controls, CR/LF or non-ASCII bytes). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** The headers of anything that starts a run (a start, D38's re-run). */
export const StartHeadersSchema = z.object({
  // The server's own rule: anything else is a 400, so the document says so.
  'Idempotency-Key': z.string().regex(IDEMPOTENCY_KEY_PATTERN).optional().describe('D18.'),
  Prefer: z.string().optional().meta({
    example: 'wait=10',
    description:
      'D28: `wait=N` (seconds, at most 60) holds an async start until the run ends: 200 with the run record, or 202 as usual once N seconds passed. Other preferences are ignored.',
  }),
});

/**
 * D11: an event cursor (`Last-Event-ID`, `starting_after`): digits. Any count of them up to 64 is
 * a number, judged against the run's log (one past its last event is `cursor_out_of_range`, as 10
 * and 10^20 are alike to the caller); longer is no cursor.
 */
const CURSOR_DIGITS = '\\d{1,64}';
export const EVENT_CURSOR = new RegExp(`^${CURSOR_DIGITS}$`);

/** D11: the stream cursor a reconnecting client sends; empty (an EventSource's reset id) is no cursor. */
export const lastEventIdHeaderSchema = (description: string) =>
  z.object({
    'Last-Event-ID': z
      .string()
      .regex(new RegExp(`^(${CURSOR_DIGITS})?$`))
      .optional()
      .describe(description),
  });

export const RangeHeaderSchema = z.object({
  Range: z.string().optional().meta({ example: 'bytes=0-1023' }),
});

/** The rate limit of the caller's key, on the answers of the keyed operations (D16). */
export const RateLimitHeadersSchema = z.object({
  'X-RateLimit-Limit': z.int().optional(),
  'X-RateLimit-Remaining': z.int().optional(),
  'X-RateLimit-Reset': z.int().optional().describe('Seconds until the window resets.'),
});

/** D19: POST /api/v1/files takes the file's name in the query. */
export const UploadQuerySchema = z
  .object({
    name: z
      .string()
      .optional()
      .describe(
        'File name (default: the multipart part’s filename); directories, control characters and quotes are dropped, and it is cut to 255 characters.',
      ),
  })
  .strict();

/** Bytes of any type, as a body; an upload's may not be empty (400 `empty_file`). */
export const BytesSchema = z.string().meta({ contentMediaType: 'application/octet-stream' });
export const UploadBytesSchema = z
  .string()
  .min(1)
  .meta({ contentMediaType: 'application/octet-stream' });
export const UploadFormSchema = z.object({ file: UploadBytesSchema });

/** D32: the codec server's token as a path segment, for a UI that can be given a URL but no header. */
export const CodecTokenPathSchema = z.object({
  token: z.string().describe("The operators' codec token (`CODEC_TOKEN`)."),
});

export const PlaygroundAssetPathSchema = z.object({
  asset: z.string().meta({ example: 'app.3f2a9c1d0b7e.js' }),
});

/** GET /healthz: the process runs. */
export const HealthSchema = z.object({ status: z.literal('ok') });
export type Health = z.infer<typeof HealthSchema>;
/** GET /readyz: MongoDB answers; Temporal's state is reported, not required. */
export const ReadinessSchema = z.object({
  status: z.literal('ready'),
  mongodb: z.literal('ok'),
  temporal: z.enum(['ok', 'unavailable']),
});
export type Readiness = z.infer<typeof ReadinessSchema>;

/**
 * One Server-Sent Event as its fields, the schema of a `text/event-stream` answer: OpenAPI 3.1
 * has no `itemSchema` (3.2 does), and tools that check streams (schemathesis) apply a stream's
 * schema to each event, as a generated client's type then describes one event too. Its `data`
 * is a StreamEvent as JSON whose `sequence_number` is also the `id`, except the closing
 * `data: [DONE]` (which sends no id of its own; an SSE parser reports the last one). That rule
 * ties one field's value to another's presence, which zod cannot say, so it is added as JSON
 * Schema's if/else pointing at the StreamEvent component (generated from its zod schema).
 */
export const ServerSentEventSchema = z
  .object({
    id: z
      .string()
      .regex(/^\d+$/)
      .optional()
      .describe('The event’s `sequence_number` (D11); send it back as `Last-Event-ID`.'),
    event: z
      .string()
      .optional()
      .describe(
        'Never sent (so `message`, the SSE default): the event’s type is `type` in `data`.',
      ),
    retry: z
      .int()
      .min(0)
      .optional()
      .describe('Reconnection delay in ms; sent once, with the first event.'),
    data: z.string(),
  })
  .meta({
    description:
      'One event of a `text/event-stream` answer, as its fields: `data` is a StreamEvent as JSON, or `[DONE]` last.',
    override: {
      if: { properties: { data: { const: '[DONE]' } } },
      else: {
        required: ['id'],
        properties: {
          data: {
            contentMediaType: 'application/json',
            contentSchema: { $ref: '#/components/schemas/StreamEvent' },
          },
        },
      },
    },
  });
