/**
 * The routes of the OpenAPI document (D25), as zod-openapi reads them: each operation's
 * parameters, body and answers name the zod schemas the API validates and answers with
 * (request-schemas.ts, response-schemas.ts, http-schemas.ts). No shape is written here as JSON
 * Schema; openapi-document.ts turns this into the document.
 */
import { z } from 'zod';
import type {
  ZodOpenApiOperationObject,
  ZodOpenApiPathsObject,
  ZodOpenApiResponseObject,
  ZodOpenApiResponsesObject,
} from 'zod-openapi';
import { WorkflowDocumentSchema } from '../../domain/graph';
import { RunSchema } from '../../domain/run-view';
import { PayloadsJsonSchema } from '../../lib/codec/json';
import {
  BytesSchema,
  CodecTokenPathSchema,
  FileIdPathSchema,
  HealthSchema,
  PlaygroundAssetPathSchema,
  RangeHeaderSchema,
  RateLimitHeadersSchema,
  ReadinessSchema,
  RunIdPathSchema,
  RunOutputPathSchema,
  ServerSentEventSchema,
  StartHeadersSchema,
  UploadBytesSchema,
  UploadFormSchema,
  UploadQuerySchema,
  WorkflowIdPathSchema,
  lastEventIdHeaderSchema,
  signedLinkQuerySchema,
} from './http-schemas';
import {
  AsyncStartResponseSchema,
  ContractQuerySchema,
  ListRunsQueryFieldsSchema,
  ListFilesQuerySchema,
  ListWorkflowsQuerySchema,
  OutputItemsQuerySchema,
  ReadRunQuerySchema,
  RerunRequestSchema,
  StartRequestSchema,
  StreamLinkRequestSchema,
  StreamQuerySchema,
} from './request-schemas';
import {
  AccountSchema,
  DeletedFileSchema,
  DeletedRunSchema,
  DeletedWorkflowSchema,
  ErrorEnvelopeSchema,
  FileListSchema,
  FileSchema,
  OutputItemListSchema,
  PublishResponseSchema,
  RunListSchema,
  StreamLinkSchema,
  WorkflowContractSchema,
  WorkflowListSchema,
} from './response-schemas';

const ERROR_TEXT: Record<number, string> = {
  400: 'Malformed request or invalid inputs (`invalid_request_error`).',
  401: 'Missing or invalid API key (`authentication_error` / `invalid_api_key`).',
  402: "The account's available credit — its balance minus what its runs in progress hold — is at or below zero (`insufficient_credits`); the message gives the balance and what is held.",
  403: 'The file or stream link is forged or altered (`invalid_signature`), has expired (`url_expired`) or was made for a key since revoked (`key_revoked`).',
  404: 'Not found, or not owned by the caller (`not_found_error`).',
  405: 'Method not allowed on this route.',
  409: 'Conflict (`idempotency_key_reused`, `run_not_cancellable`, `run_not_finished`, `run_inputs_erased`, `file_of_run`).',
  413: 'Body over the limit (`request_too_large`), or an upload the account’s storage quota has no room for (`storage_quota_exceeded`).',
  415: 'The body’s media type is not one this operation takes (Content-Type, its charset, or a Content-Encoding).',
  416: 'The requested byte range is outside the file (`range_not_satisfiable`); `Content-Range: bytes */<size>`.',
  422: 'The published graph cannot run (`workflow_graph_corrupt`).',
  431: 'The request line and headers are over the 16 KiB the server reads (`request_too_large`): a long filter list, for one.',
  429: 'Rate limit exceeded (`rate_limit_error` / `rate_limit_exceeded`), or, for a stream, the key already holds its most open streams (`too_many_streams`, D40), or, for a results-file download or a finished big run read whole, its most downloads in progress (`too_many_downloads`), or, for a publish, the account’s most publishes in progress (`too_many_publishes`); see `Retry-After`.',
  500: 'Unexpected server error (`server_error`).',
  503: 'Temporal or MongoDB unreachable (`server_error` / `service_unavailable`); retry.',
};

/** An error answer: the envelope `{"error": {message, type, code?, param?}}`. */
const errorAnswer = (description: string): ZodOpenApiResponseObject => ({
  description,
  content: { 'application/json': { schema: ErrorEnvelopeSchema } },
});
const errors = (...statuses: number[]): ZodOpenApiResponsesObject =>
  Object.fromEntries(statuses.map((s) => [String(s), errorAnswer(ERROR_TEXT[s])]));

/** A JSON answer, with the key's rate limit headers when `rated`. */
const json = (schema: z.ZodType, description: string, rated = false): ZodOpenApiResponseObject => ({
  description,
  content: { 'application/json': { schema } },
  ...(rated ? { headers: RateLimitHeadersSchema } : {}),
});
/** A `text/event-stream` answer; its schema is that of each event. */
const sse = (description: string): ZodOpenApiResponseObject => ({
  description: `${description} Each event is \`id: <sequence_number>\` and \`data: <StreamEvent JSON>\`; the stream ends with \`data: [DONE]\`. Comment lines (\`: keepalive\`) every 15 s. The schema is that of each event (ServerSentEvent).`,
  content: { 'text/event-stream': { schema: ServerSentEventSchema } },
});
/** D11: a resume whose cursor is at the terminal event has nothing left to send. */
const resumeDone: ZodOpenApiResponsesObject = {
  '204': {
    description:
      'The cursor is the run’s terminal event: nothing is left to receive (a browser EventSource stops reconnecting).',
  },
};
const streamStart = sse(
  'Stream mode (`stream: true`): `response.created` first, a terminal event last.',
);
/** OpenAPI links from an answer carrying a run id (at `pointer`) to the operations that take one. */
const runLinks = (pointer: string) => ({
  GetRun: { operationId: 'getRun', parameters: { runId: `$response.body#/${pointer}` } },
  StreamRun: { operationId: 'streamRun', parameters: { runId: `$response.body#/${pointer}` } },
  CancelRun: { operationId: 'cancelRun', parameters: { runId: `$response.body#/${pointer}` } },
});

/** The body and answers of anything that starts a run (api/routes/answer-start.ts): 202, its stream, or D28's record. */
function startAnswers(
  body: z.ZodType,
): Pick<ZodOpenApiOperationObject, 'requestBody' | 'responses'> {
  return {
    requestBody: { required: true, content: { 'application/json': { schema: body } } },
    responses: {
      '202': {
        ...json(AsyncStartResponseSchema, 'Accepted (async mode).', true),
        links: runLinks('run_id'),
      },
      '200': {
        description: `${streamStart.description} Or, with \`Prefer: wait=N\` (D28), the record of a run that ended within N seconds (\`Preference-Applied\` says so).`,
        content: { ...streamStart.content, 'application/json': { schema: RunSchema } },
        headers: RateLimitHeadersSchema,
      },
      ...errors(400, 401, 402, 404, 409, 413, 415, 422, 429, 500, 503),
    },
  };
}

/** A public operation: no Authorization header (signed links, probes, the playground, this document). */
const publicOperation = (
  operationId: string,
  summary: string,
  answers: ZodOpenApiResponsesObject,
  extra: Partial<ZodOpenApiOperationObject> = {},
): ZodOpenApiOperationObject => ({
  operationId,
  summary,
  security: [],
  ...extra,
  responses: answers,
});

/** Every route the app serves (test/api/routes/openapi.test.ts checks both ways). */
export const OPENAPI_PATHS: ZodOpenApiPathsObject = {
  '/api/v1/responses': {
    post: {
      operationId: 'startRun',
      summary: 'Start a run of a published workflow',
      requestParams: { header: StartHeadersSchema },
      ...startAnswers(StartRequestSchema),
    },
  },
  '/api/v1/runs': {
    get: {
      operationId: 'listRuns',
      summary: 'List your runs, newest first (D23)',
      requestParams: { query: ListRunsQueryFieldsSchema },
      responses: {
        '200': json(RunListSchema, 'A page of runs.', true),
        ...errors(400, 401, 429, 431, 500, 503),
      },
    },
  },
  '/api/v1/runs/{runId}/cancel': {
    post: {
      operationId: 'cancelRun',
      summary:
        'Cancel a run (D8): 202 with the run record; it turns `cancelled` once the run has stopped',
      requestParams: { path: RunIdPathSchema },
      responses: {
        '202': {
          ...json(RunSchema, 'Cancellation requested (or already cancelled).'),
          links: runLinks('id'),
        },
        ...errors(401, 404, 409, 429, 500, 503),
      },
    },
  },
  '/api/v1/runs/{runId}/rerun': {
    post: {
      operationId: 'rerunRun',
      summary:
        'Re-run a run (D38): a new run of the same version, inputs, metadata and webhook, with `parent_run_id`; answered like a start',
      description:
        '`items: "failed"` runs again only the failed items of each list node (and what depends on them) of a finished run and carries its completed items over, billing only what runs; `items: "all"` runs it again whole.',
      requestParams: { path: RunIdPathSchema, header: StartHeadersSchema },
      ...startAnswers(RerunRequestSchema),
    },
  },
  '/api/v1/workflows/{workflowId}': {
    get: {
      operationId: 'getWorkflowContract',
      summary: 'A published workflow’s inputs (with a JSON Schema) and outputs (D24)',
      requestParams: { path: WorkflowIdPathSchema, query: ContractQuerySchema },
      responses: {
        '200': json(WorkflowContractSchema, 'The contract.'),
        ...errors(400, 401, 404, 429, 500, 503),
      },
    },
    delete: {
      operationId: 'deleteWorkflow',
      summary:
        'Delete one of your workflows and every version of it (D26): its slug is free again and its room in the workflow storage quota too; runs already started finish, and keep their results',
      requestParams: { path: WorkflowIdPathSchema },
      responses: {
        '200': json(DeletedWorkflowSchema, 'Deleted.', true),
        ...errors(401, 404, 429, 500, 503),
      },
    },
  },
  '/api/v1/runs/{runId}': {
    get: {
      operationId: 'getRun',
      summary: 'Read a run (safe to poll every 1–3 s)',
      requestParams: { path: RunIdPathSchema, query: ReadRunQuerySchema },
      responses: {
        '200': { ...json(RunSchema, 'The run record.', true), links: runLinks('id') },
        ...errors(400, 401, 404, 429, 500, 503),
      },
    },
    delete: {
      operationId: 'deleteRun',
      summary:
        'Delete a run (D39): a live run is cancelled first; then its inputs, outputs, event log and files are gone for good and every read of it is 404',
      requestParams: { path: RunIdPathSchema },
      responses: {
        '200': json(DeletedRunSchema, 'Deleted.', true),
        ...errors(401, 404, 429, 500, 503),
      },
    },
  },
  '/api/v1/runs/{runId}/outputs/{key}': {
    get: {
      operationId: 'listOutputItems',
      summary:
        'Page one output of a run, live or finished (D31), or download all of it as JSON Lines or CSV (D35)',
      requestParams: { path: RunOutputPathSchema, query: OutputItemsQuerySchema },
      responses: {
        '200': {
          ...json(
            OutputItemListSchema,
            'A page of items in output order; items of a live run that have not ended show `running`. With `Accept: application/x-ndjson` or `text/csv`, the results file instead: every item of the output, in order, streamed (the page query is ignored).',
            true,
          ),
          content: {
            'application/json': { schema: OutputItemListSchema },
            'application/x-ndjson': {
              schema: z.string().meta({
                description: 'One OutputItem JSON object a line, in output order.',
              }),
            },
            'text/csv': {
              schema: z.string().meta({
                description:
                  "RFC 4180 CSV under the header `item_index,id,status,output,error`: one record per item, its parts as text (file parts as their links), a failed item’s message; a field starting with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`.",
              }),
            },
          },
        },
        ...errors(400, 401, 404, 429, 500, 503),
      },
    },
  },
  '/api/v1/runs/{runId}/stream': {
    get: {
      operationId: 'streamRun',
      summary: 'Attach to the event stream of a run (reconnect or follow an async run)',
      requestParams: {
        path: RunIdPathSchema,
        header: lastEventIdHeaderSchema(
          'The last event id the client has (D11); wins over `starting_after`. Empty: no cursor.',
        ),
        query: StreamQuerySchema,
      },
      responses: {
        '200': sse('`response.resumed` first, then the events after the cursor (D11).'),
        ...resumeDone,
        ...errors(400, 401, 404, 429, 500),
      },
    },
  },
  '/api/v1/runs/{runId}/stream-link': {
    post: {
      operationId: 'createStreamLink',
      summary:
        'A signed link to the run’s stream that needs no Authorization header, for a browser’s EventSource (D34)',
      requestParams: { path: RunIdPathSchema },
      requestBody: {
        required: false,
        content: { 'application/json': { schema: StreamLinkRequestSchema } },
      },
      responses: {
        '200': json(StreamLinkSchema, 'The link.', true),
        ...errors(400, 401, 404, 413, 415, 429, 500, 503),
      },
    },
  },
  '/streams/{runId}': {
    get: publicOperation(
      'followStreamLink',
      'The run’s event stream behind a signed stream link (no Authorization header); the same rules as streamRun',
      { '200': sse('As streamRun answers.'), ...resumeDone, ...errors(400, 403, 404, 429, 500) },
      {
        requestParams: {
          path: RunIdPathSchema,
          query: signedLinkQuerySchema('the run id').extend(StreamQuerySchema.shape),
          header: lastEventIdHeaderSchema(
            'As for streamRun; a browser’s EventSource resends it by itself.',
          ),
        },
      },
    ),
  },
  '/api/v1/workflows': {
    get: {
      operationId: 'listWorkflows',
      summary:
        'List your published workflows, newest first, each as its latest version’s contract (D30)',
      requestParams: { query: ListWorkflowsQuerySchema },
      responses: {
        '200': json(WorkflowListSchema, 'A page of workflows.', true),
        ...errors(400, 401, 429, 500, 503),
      },
    },
    post: {
      operationId: 'publishWorkflow',
      summary: 'Publish a workflow graph (a new workflow, or the next version of its slug)',
      requestBody: {
        required: true,
        content: { 'application/json': { schema: WorkflowDocumentSchema } },
      },
      responses: {
        '201': {
          ...json(PublishResponseSchema, 'Published.'),
          // Both pin the version just published: a link leaving `version` open would pair the workflow with any version.
          links: {
            GetContract: {
              operationId: 'getWorkflowContract',
              parameters: {
                workflowId: '$response.body#/workflow_id',
                version: '$response.body#/version_id',
              },
            },
            GetContractBySlug: {
              operationId: 'getWorkflowContract',
              parameters: {
                workflowId: '$response.body#/slug',
                version: '$response.body#/version',
              },
            },
          },
        },
        ...errors(400, 401, 413, 415, 429, 500, 503),
      },
    },
  },
  '/api/v1/files': {
    get: {
      operationId: 'listFiles',
      summary:
        'List your uploads, newest first, with fresh signed links (D19; the files your runs made are on the runs)',
      requestParams: { query: ListFilesQuerySchema },
      responses: {
        '200': json(FileListSchema, 'A page of files.', true),
        ...errors(400, 401, 429, 500, 503),
      },
    },
    post: {
      operationId: 'uploadFile',
      summary:
        'Upload a file (D19): the raw body, or the first file part of a multipart form; streamed, 256 MiB at most by default, within the account’s storage quota',
      requestParams: { query: UploadQuerySchema },
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': { schema: UploadFormSchema },
          '*/*': { schema: UploadBytesSchema },
        },
      },
      responses: {
        '201': {
          ...json(FileSchema, 'Stored; `mime_type` is sniffed from the bytes.', true),
          links: {
            GetFile: { operationId: 'getFile', parameters: { fileId: '$response.body#/id' } },
          },
        },
        ...errors(400, 401, 413, 415, 429, 500, 503),
      },
    },
  },
  '/api/v1/files/{fileId}': {
    get: {
      operationId: 'getFile',
      summary: 'A file of your account, with a fresh signed link',
      requestParams: { path: FileIdPathSchema },
      responses: {
        '200': json(FileSchema, 'The file.', true),
        ...errors(401, 404, 429, 500, 503),
      },
    },
    delete: {
      operationId: 'deleteFile',
      summary:
        'Delete an upload (D19): its bytes and links are gone and its room in the storage quota is free; a run’s own file goes with its run (`file_of_run`)',
      requestParams: { path: FileIdPathSchema },
      responses: {
        '200': json(DeletedFileSchema, 'Deleted.', true),
        ...errors(401, 404, 409, 429, 500, 503),
      },
    },
  },
  '/api/v1/account': {
    get: {
      operationId: 'getAccount',
      summary:
        'Your account (D41): its credit (balance, held by runs in progress, available) and its storage quotas',
      responses: {
        '200': json(AccountSchema, 'The account.', true),
        ...errors(401, 429, 500, 503),
      },
    },
  },
  '/files/{fileId}/content': {
    get: publicOperation(
      'getFileContent',
      'The bytes behind a signed link (no Authorization header); single byte ranges supported',
      {
        '200': {
          description: 'The whole file, with its sniffed Content-Type.',
          content: { '*/*': { schema: BytesSchema } },
        },
        '206': {
          description: 'The requested byte range (`Content-Range`).',
          content: { '*/*': { schema: BytesSchema } },
        },
        '304': {
          description:
            'Not modified: `If-None-Match` or `If-Modified-Since` matches the file (no body).',
        },
        ...errors(403, 404, 416, 500),
      },
      {
        requestParams: {
          path: FileIdPathSchema,
          query: signedLinkQuerySchema('the id'),
          header: RangeHeaderSchema,
        },
      },
    ),
  },
  '/api/v1/openapi.json': {
    get: publicOperation('openapi', 'This OpenAPI 3.1 document (D25)', {
      '200': {
        description: 'This document.',
        content: { 'application/json': { schema: z.looseObject({}) } },
      },
    }),
  },
  '/metrics': {
    get: publicOperation('metrics', 'Prometheus metrics of this process', {
      '200': {
        description: 'Prometheus exposition format.',
        content: { 'text/plain': { schema: z.string() } },
      },
    }),
  },
  '/': {
    get: publicOperation('playground', 'The playground: try any published workflow in a browser', {
      '200': {
        description:
          'The page (`Cache-Control: no-cache`, an `ETag`, a strict Content-Security-Policy).',
        content: { 'text/html': { schema: z.string() } },
      },
      '304': { description: 'Not modified (`If-None-Match` matched the ETag).' },
    }),
  },
  '/playground/{asset}': {
    get: publicOperation(
      'playgroundAsset',
      'A script or stylesheet of the playground; the name holds its content hash, so it is cached for a year',
      {
        '200': {
          description: 'The file.',
          content: {
            'text/javascript': { schema: z.string() },
            'text/css': { schema: z.string() },
          },
        },
        ...errors(404),
      },
      { requestParams: { path: PlaygroundAssetPathSchema } },
    ),
  },
  '/healthz': {
    get: publicOperation('health', 'Liveness: the process runs', {
      '200': json(HealthSchema, 'The process runs.'),
    }),
  },
  '/readyz': {
    get: publicOperation('ready', 'Readiness: MongoDB answers (Temporal reported in the body)', {
      '200': json(
        ReadinessSchema,
        'MongoDB answers. `temporal` says whether Temporal does (`ok`, `unavailable`): starts need it, reads of finished runs do not.',
      ),
      ...errors(503),
    }),
  },
  ...codecPaths(),
};

/**
 * D32: the operators' codec server (Temporal's remote codec protocol), for the Temporal UI and
 * CLI; not for API callers. Each operation also exists with the token as a path segment, for a
 * UI that can be given an endpoint URL but no header.
 */
function codecPaths(): ZodOpenApiPathsObject {
  const operation = (op: 'decode' | 'encode', inPath: boolean): ZodOpenApiOperationObject => ({
    operationId: `codec${op[0].toUpperCase()}${op.slice(1)}${inPath ? 'WithPathToken' : ''}`,
    summary:
      op === 'decode'
        ? 'Opens sealed Temporal payloads (operators only)'
        : 'Seals Temporal payloads with the newest key (operators only)',
    tags: ['operators'],
    security: inPath ? [] : [{ codecToken: [] }],
    ...(inPath ? { requestParams: { path: CodecTokenPathSchema } } : {}),
    requestBody: {
      required: true,
      content: { 'application/json': { schema: PayloadsJsonSchema } },
    },
    responses: {
      '200': json(
        PayloadsJsonSchema,
        op === 'decode'
          ? 'The payloads opened (payloads not sealed by this service are returned as they are).'
          : 'The payloads sealed.',
      ),
      ...errors(400, 413, 415),
      '401': errorAnswer(
        'Missing or wrong codec token (`authentication_error` / `invalid_codec_token`).',
      ),
      ...errors(503),
    },
  });
  return {
    '/codec/decode': { post: operation('decode', false) },
    '/codec/encode': { post: operation('encode', false) },
    '/codec/{token}/decode': { post: operation('decode', true) },
    '/codec/{token}/encode': { post: operation('encode', true) },
  };
}
