/**
 * Response and event schemas of the public API (spec "Resources", "Events", "Errors"): the
 * types the handlers return (z.infer) and, with the request schemas, the OpenAPI document.
 */
import { z } from 'zod';
import { INPUT_TYPES } from '../../domain/graph';
import { OutputItemSchema, RunSchema, dateTime } from '../../domain/run-view';

/** Every event a stream can carry: defined once, in domain/ (the workflow writes the log with its types). */
export { StreamEventSchema } from '../../domain/run-events';

export const ProblemSchema = z.object({ field: z.string(), problem: z.string() });

export const ErrorEnvelopeSchema = z.object({
  error: z.object({
    message: z.string(),
    type: z.enum([
      'authentication_error',
      'insufficient_credits',
      'rate_limit_error',
      'invalid_request_error',
      'not_found_error',
      'server_error',
    ]),
    code: z.string().optional(),
    param: z.string().optional(),
    details: z.array(ProblemSchema).optional(),
  }),
});

const ContractInputSchema = z.object({
  key: z.string(),
  label: z.string(),
  node_id: z.string(),
  type: z.enum(INPUT_TYPES),
  required: z.boolean(),
  default: z.unknown().optional(),
  description: z.string().optional(),
});
const ContractOutputSchema = z.object({ key: z.string(), label: z.string(), node_id: z.string() });

export const PublishResponseSchema = z.object({
  workflow_id: z.string(),
  version_id: z.string(),
  version: z.int().min(1),
  slug: z.string(),
  inputs: z.array(ContractInputSchema),
  outputs: z.array(ContractOutputSchema),
});

/** An uploaded or stored file (D19); `url` is a signed link that needs no Authorization header. */
export const FileSchema = z.object({
  id: z.string().describe('`file_...` (D5).'),
  name: z.string(),
  mime_type: z
    .string()
    .describe('Sniffed from the bytes, not taken from the upload’s Content-Type.'),
  size: z.int().min(0).describe('Bytes.'),
  created_at: dateTime,
  url: z.string().meta({
    format: 'uri',
    description: 'Signed link to the content; expires (FILE_URL_TTL_SECONDS, default 7 days).',
  }),
});
export type FileView = z.infer<typeof FileSchema>;

const usd = (description: string) => z.number().describe(description);
const quotaSchema = (what: string) =>
  z.object({
    used_bytes: z.int().min(0).describe(`Bytes ${what} hold now.`),
    quota_bytes: z.int().min(0).describe('The most they may hold at once.'),
  });

/** D41: the caller's account, its credit and its storage quotas (GET /api/v1/account). */
export const AccountSchema = z.object({
  id: z.string().describe('`acct_...` (D5).'),
  object: z.literal('account'),
  name: z.string(),
  credits: z
    .object({
      balance_usd: usd('The ledger balance: credits added minus what ended runs cost.'),
      held_usd: usd('Held by runs in progress (and starts being admitted) until they end (D17).'),
      available_usd: usd(
        'What new runs may use: the balance minus what is held; a start is 402 at or below 0.',
      ),
    })
    .describe('At most a few seconds old; never shows more available than there is.'),
  file_storage: quotaSchema(
    'your uploads, the files your runs made and the items of big runs',
  ).describe('D19: past the quota, uploads are 413 `storage_quota_exceeded`.'),
  workflow_storage: quotaSchema('your published workflow versions').describe(
    'D26: past the quota, a publish is 413 `storage_quota_exceeded`.',
  ),
});
export type AccountView = z.infer<typeof AccountSchema>;

/** A page of a cursor-paginated list (D23, D30): `starting_after=<last_id>` asks for the next one. */
const listOf = <T extends z.ZodType>(item: T) =>
  z.object({
    object: z.literal('list'),
    data: z.array(item),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  });

/** D23: a page of runs. */
export const RunListSchema = listOf(RunSchema);

/** D39: the answer of DELETE /api/v1/runs/{runId}. */
/** The answer of a DELETE: `{id, object, deleted: true}`, as OpenAI's API answers one. */
const deletedSchema = <O extends string>(object: O, idDescription: string) =>
  z.object({
    id: z.string().describe(idDescription),
    object: z.literal(object),
    deleted: z.literal(true),
  });

export const DeletedRunSchema = deletedSchema('run', 'The deleted run’s id (`run_...`).');
export type DeletedRun = z.infer<typeof DeletedRunSchema>;

/** D19: a page of the caller's uploads. */
export const FileListSchema = listOf(FileSchema);
export type FileList = z.infer<typeof FileListSchema>;

/** D19: the answer of DELETE /api/v1/files/{fileId}. */
export const DeletedFileSchema = deletedSchema('file', 'The deleted file’s id (`file_...`).');
export type DeletedFile = z.infer<typeof DeletedFileSchema>;

/** D26: the answer of DELETE /api/v1/workflows/{workflowId}. */
export const DeletedWorkflowSchema = deletedSchema(
  'workflow',
  'The deleted workflow’s id (`wf_...`).',
);
export type DeletedWorkflow = z.infer<typeof DeletedWorkflowSchema>;

/** D31: a page of one output's items, in output order. */
export const OutputItemListSchema = z.object({
  object: z.literal('list'),
  data: z.array(OutputItemSchema),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});
export type OutputItemList = z.infer<typeof OutputItemListSchema>;

/** D24: what a client needs to build a form for a workflow. */
export const WorkflowContractSchema = z.object({
  workflow_id: z.string(),
  slug: z.string(),
  name: z.string().nullable(),
  version: z.int().min(1),
  version_id: z.string(),
  created_at: dateTime,
  inputs: z.array(ContractInputSchema),
  outputs: z.array(ContractOutputSchema),
  inputs_schema: z
    .record(z.string(), z.unknown())
    .describe('JSON Schema (2020-12) of the start request’s `inputs`.'),
});

/** D30: a page of published workflows, each as its latest version's contract. */
export const WorkflowListSchema = listOf(WorkflowContractSchema);

/** D34: the answer of POST /api/v1/runs/{runId}/stream-link. */
export const StreamLinkSchema = z.object({
  url: z
    .string()
    .describe(
      'GET it without an Authorization header (a browser’s `new EventSource(url)`); resumable with `Last-Event-ID`.',
    ),
  expires_at: z.iso
    .datetime()
    .describe('When the link stops working; a stream open then is not cut.'),
});
export type StreamLink = z.infer<typeof StreamLinkSchema>;
