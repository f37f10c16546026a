/**
 * The OpenAPI 3.1 document (D25), generated from the same zod schemas that validate requests
 * and type responses, so it cannot drift from what the server does.
 */
import { z } from 'zod';
import { WorkflowDocumentSchema } from '../../domain/graph';
import {
  AsyncStartResponseSchema,
  ContractQuerySchema,
  ListRunsQuerySchema,
  ListWorkflowsQuerySchema,
  OutputItemsQuerySchema,
  StartRequestSchema,
  RerunRequestSchema,
  StreamLinkRequestSchema,
  StreamQuerySchema,
} from './request-schemas';
import {
  ErrorEnvelopeSchema,
  FileSchema,
  PublishResponseSchema,
  RunListSchema,
  DeletedRunSchema,
  OutputItemListSchema,
  StreamEventSchema,
  StreamLinkSchema,
  WorkflowContractSchema,
  WorkflowListSchema,
} from './response-schemas';
import { RunSchema } from '../../domain/run-view';
import { PayloadsJsonSchema } from '../../lib/codec/json';

type Json = Record<string, unknown>;

const ERROR_TEXT: Record<number, string> = {
  400: 'Malformed request or invalid inputs (`invalid_request_error`).',
  401: 'Missing or invalid API key (`authentication_error` / `invalid_api_key`).',
  402: "The account's available credit — its balance minus what its runs in progress hold — is at or below zero (`insufficient_credits`); the message gives the balance and what is held.",
  403: 'The file or stream link is forged or altered (`invalid_signature`), has expired (`url_expired`) or was made for a key since revoked (`key_revoked`).',
  404: 'Not found, or not owned by the caller (`not_found_error`).',
  405: 'Method not allowed on this route.',
  409: 'Conflict (`idempotency_key_reused`, `run_not_cancellable`, `run_not_finished`, `run_inputs_erased`).',
  413: 'Body over the limit (`request_too_large`).',
  415: 'Content-Type is not application/json.',
  416: 'The requested byte range is outside the file (`range_not_satisfiable`); `Content-Range: bytes */<size>`.',
  422: 'The published graph cannot run (`workflow_graph_corrupt`).',
  431: 'The request line and headers are over the 16 KiB the server reads (`request_too_large`): a long filter list, for one.',
  429: 'Rate limit exceeded (`rate_limit_error` / `rate_limit_exceeded`), or, for a stream, the key already holds its most open streams (`too_many_streams`, D40); see `Retry-After`.',
  500: 'Unexpected server error (`server_error`).',
  503: 'Temporal or MongoDB unreachable (`server_error` / `service_unavailable`); retry.',
};

/** A component schema: JSON Schema 2020-12 (OpenAPI 3.1's dialect) without its `$schema` line. */
function schemaOf(schema: z.ZodType, io: 'input' | 'output' = 'output'): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
  }) as Json;
  return rest;
}

/**
 * A request body's schema. `default` moves into the description: code generators (openapi-typescript)
 * read a default as "always present" and would make callers send the field.
 */
function requestSchema(schema: z.ZodType): Json {
  const MAPS = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas']); // name → schema, not schemas themselves
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(strip);
    if (!node || typeof node !== 'object') return node;
    const { default: dflt, ...rest } = node as Json;
    const out: Json = Object.fromEntries(
      Object.entries(rest).map(([k, v]) => [
        k,
        MAPS.has(k) && v && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([n, sub]) => [n, strip(sub)]))
          : strip(v),
      ]),
    );
    if (dflt !== undefined)
      out.description = `${typeof out.description === 'string' ? `${out.description} ` : ''}Default: \`${JSON.stringify(dflt)}\`.`;
    return out;
  };
  return strip(schemaOf(schema, 'input')) as Json;
}

/** One query parameter per property of a query schema; an object one (D37 `metadata`) is `metadata[<key>]=<value>`. */
function queryParameters(schema: z.ZodType): Json[] {
  const { properties = {} } = schemaOf(schema, 'input') as { properties?: Record<string, Json> };
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: 'query',
    required: false,
    schema: property,
    ...(property.type === 'object' ? { style: 'deepObject', explode: true } : {}),
  }));
}

function errors(...statuses: number[]): Json {
  return Object.fromEntries(
    statuses.map((s) => [
      String(s),
      {
        description: ERROR_TEXT[s],
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    ]),
  );
}

const json = (ref: string, description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } },
});
/**
 * One Server-Sent Event as its fields, the schema of a `text/event-stream` answer: OpenAPI 3.1
 * has no `itemSchema` (3.2 does), and tools that check streams (schemathesis) apply a stream's
 * schema to each event, as a generated client's type then describes one event too. Its `data`
 * is a StreamEvent as JSON whose `sequence_number` is also the `id`, except the closing
 * `data: [DONE]` (which sends no id of its own; an SSE parser reports the last one).
 */
const serverSentEvent = {
  type: 'object',
  description:
    'One event of a `text/event-stream` answer, as its fields: `data` is a StreamEvent as JSON, or `[DONE]` last.',
  required: ['data'],
  properties: {
    id: {
      type: 'string',
      pattern: '^\\d+$',
      description: 'The event’s `sequence_number` (D11); send it back as `Last-Event-ID`.',
    },
    event: {
      type: 'string',
      description:
        'Never sent (so `message`, the SSE default): the event’s type is `type` in `data`.',
    },
    retry: {
      type: 'integer',
      minimum: 0,
      description: 'Reconnection delay in ms; sent once, with the first event.',
    },
    data: { type: 'string' },
  },
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
};
const sse = (description: string) => ({
  description: `${description} Each event is \`id: <sequence_number>\` and \`data: <StreamEvent JSON>\`; the stream ends with \`data: [DONE]\`. Comment lines (\`: keepalive\`) every 15 s. The schema is that of each event (ServerSentEvent).`,
  content: { 'text/event-stream': { schema: { $ref: '#/components/schemas/ServerSentEvent' } } },
});
/** D11: a resume whose cursor is at the terminal event has nothing left to send. */
const resumeDone = {
  '204': {
    description:
      'The cursor is the run’s terminal event: nothing is left to receive (a browser EventSource stops reconnecting).',
  },
};
/** The body of a probe's 200: `{"status": "<word>"}`. */
const probe = (status: string, description: string) => ({
  description,
  content: {
    'application/json': {
      schema: { type: 'object', properties: { status: { const: status } }, required: ['status'] },
    },
  },
});
/** The query parameters of a signed link (D19 files, stream links): its expiry and its signature over `what` and the expiry. */
function signedLinkParams(what: string) {
  return [
    {
      name: 'expires',
      in: 'query',
      required: true,
      schema: { type: 'string', pattern: '^\\d+$' },
      description: 'Unix seconds.',
    },
    {
      name: 'kid',
      in: 'query',
      required: false,
      schema: { type: 'string', pattern: '^key_[A-Za-z0-9_-]{1,64}$' },
      description:
        'The API key the link was made for (D6): signed with the rest; once that key is revoked the link is 403 `key_revoked`.',
    },
    {
      name: 'sig',
      in: 'query',
      required: true,
      schema: { type: 'string' },
      description: `HMAC-SHA256 of ${what}, expiry and key (when named).`,
    },
  ];
}

const runIdParam = {
  name: 'runId',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^run_[0-9A-HJKMNP-TV-Z]{26}$' },
};
const fileIdParam = {
  name: 'fileId',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^file_[0-9A-HJKMNP-TV-Z]{26}$' },
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
const rateHeaders = {
  'X-RateLimit-Limit': { schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { schema: { type: 'integer' } },
  'X-RateLimit-Reset': {
    schema: { type: 'integer' },
    description: 'Seconds until the window resets.',
  },
};

/** Builds the whole document; `serverUrl` is where this process is reachable, when known. */
/** The headers of anything that starts a run (a start, D38's re-run). */
const startHeaders = [
  // The server's own rule (visible ASCII, no spaces): anything else is a 400, so the document says so.
  {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    schema: { type: 'string', pattern: '^[\\x21-\\x7E]{1,255}$' },
    description: 'D18.',
  },
  {
    name: 'Prefer',
    in: 'header',
    required: false,
    schema: { type: 'string', example: 'wait=10' },
    description:
      'D28: `wait=N` (seconds, at most 60) holds an async start until the run ends: 200 with the run record, or 202 as usual once N seconds passed. Other preferences are ignored.',
  },
];

/** The body and answers of anything that starts a run (api/routes/answer-start.ts): 202, its stream, or D28's record. */
function startAnswers(bodySchema: string): Json {
  return {
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { $ref: `#/components/schemas/${bodySchema}` } } },
    },
    responses: {
      '202': {
        ...json('AsyncStart', 'Accepted (async mode).'),
        headers: rateHeaders,
        links: runLinks('run_id'),
      },
      '200': {
        description: `${streamStart.description} Or, with \`Prefer: wait=N\` (D28), the record of a run that ended within N seconds (\`Preference-Applied\` says so).`,
        content: {
          ...streamStart.content,
          'application/json': { schema: { $ref: '#/components/schemas/Run' } },
        },
        headers: rateHeaders,
      },
      ...errors(400, 401, 402, 404, 409, 413, 415, 422, 429, 500, 503),
    },
  };
}

export function buildOpenApiDocument(serverUrl?: string): Json {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Workflow Run Service',
      version: '1.0.0',
      description:
        'Runs published AI workflows. Reference: docs/api.md; decisions D1–D34: docs/decisions.md.',
    },
    // Relative to where the document was fetched from, unless PUBLIC_BASE_URL names the address.
    servers: [{ url: serverUrl ?? '/' }],
    security: [{ bearer: [] }],
    paths: {
      '/api/v1/responses': {
        post: {
          operationId: 'startRun',
          summary: 'Start a run of a published workflow',
          parameters: [...startHeaders],
          ...startAnswers('StartRequest'),
        },
      },
      '/api/v1/runs': {
        get: {
          operationId: 'listRuns',
          summary: 'List your runs, newest first (D23)',
          parameters: queryParameters(ListRunsQuerySchema),
          responses: {
            '200': { ...json('RunList', 'A page of runs.'), headers: rateHeaders },
            ...errors(400, 401, 429, 431, 500, 503),
          },
        },
      },
      '/api/v1/runs/{runId}/cancel': {
        post: {
          operationId: 'cancelRun',
          summary:
            'Cancel a run (D8): 202 with the run record; it turns `cancelled` once the run has stopped',
          parameters: [runIdParam],
          responses: {
            '202': {
              ...json('Run', 'Cancellation requested (or already cancelled).'),
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
          parameters: [runIdParam, ...startHeaders],
          ...startAnswers('RerunRequest'),
        },
      },
      '/api/v1/workflows/{workflowId}': {
        get: {
          operationId: 'getWorkflowContract',
          summary: 'A published workflow’s inputs (with a JSON Schema) and outputs (D24)',
          parameters: [
            {
              name: 'workflowId',
              in: 'path',
              required: true,
              schema: { type: 'string' },
              description: 'A `wf_...` id or a slug.',
            },
            ...queryParameters(ContractQuerySchema),
          ],
          responses: {
            '200': json('WorkflowContract', 'The contract.'),
            ...errors(400, 401, 404, 429, 500, 503),
          },
        },
      },
      '/api/v1/runs/{runId}': {
        get: {
          operationId: 'getRun',
          summary: 'Read a run (safe to poll every 1–3 s)',
          parameters: [runIdParam],
          responses: {
            '200': {
              ...json('Run', 'The run record.'),
              headers: rateHeaders,
              links: runLinks('id'),
            },
            ...errors(401, 404, 429, 500, 503),
          },
        },
        delete: {
          operationId: 'deleteRun',
          summary:
            'Delete a run (D39): a live run is cancelled first; then its inputs, outputs, event log and files are gone for good and every read of it is 404',
          parameters: [runIdParam],
          responses: {
            '200': {
              ...json('DeletedRun', 'Deleted.'),
              headers: rateHeaders,
            },
            ...errors(401, 404, 429, 500, 503),
          },
        },
      },
      '/api/v1/runs/{runId}/outputs/{key}': {
        get: {
          operationId: 'listOutputItems',
          summary: 'Page one output of a run, live or finished (D31)',
          parameters: [
            runIdParam,
            {
              name: 'key',
              in: 'path',
              required: true,
              schema: { type: 'string' },
              description: 'The normalized label of a User Result (a key of `output`).',
            },
            ...queryParameters(OutputItemsQuerySchema),
          ],
          responses: {
            '200': {
              ...json(
                'OutputItemList',
                'A page of items in output order; items of a live run that have not ended show `running`.',
              ),
              headers: rateHeaders,
            },
            ...errors(400, 401, 404, 429, 500, 503),
          },
        },
      },
      '/api/v1/runs/{runId}/stream': {
        get: {
          operationId: 'streamRun',
          summary: 'Attach to the event stream of a run (reconnect or follow an async run)',
          parameters: [
            runIdParam,
            {
              name: 'Last-Event-ID',
              in: 'header',
              required: false,
              // Empty is what an EventSource's reset id amounts to: no cursor, as if the header were absent.
              schema: { type: 'string', pattern: '^(\\d{1,9})?$' },
              description:
                'The last event id the client has (D11); wins over `starting_after`. Empty: no cursor.',
            },
            ...queryParameters(StreamQuerySchema),
          ],
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
          parameters: [runIdParam],
          requestBody: {
            required: false,
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/StreamLinkRequest' } },
            },
          },
          responses: {
            '200': { ...json('StreamLink', 'The link.'), headers: rateHeaders },
            ...errors(400, 401, 404, 413, 415, 429, 500, 503),
          },
        },
      },
      '/streams/{runId}': {
        get: {
          operationId: 'followStreamLink',
          summary:
            'The run’s event stream behind a signed stream link (no Authorization header); the same rules as streamRun',
          security: [],
          parameters: [
            runIdParam,
            ...signedLinkParams('the run id'),
            {
              name: 'Last-Event-ID',
              in: 'header',
              required: false,
              schema: { type: 'string', pattern: '^(\\d{1,9})?$' },
              description: 'As for streamRun; a browser’s EventSource resends it by itself.',
            },
            ...queryParameters(StreamQuerySchema),
          ],
          responses: {
            '200': sse('As streamRun answers.'),
            ...resumeDone,
            ...errors(400, 403, 404, 429, 500),
          },
        },
      },
      '/api/v1/workflows': {
        get: {
          operationId: 'listWorkflows',
          summary:
            'List your published workflows, newest first, each as its latest version’s contract (D30)',
          parameters: queryParameters(ListWorkflowsQuerySchema),
          responses: {
            '200': { ...json('WorkflowList', 'A page of workflows.'), headers: rateHeaders },
            ...errors(400, 401, 429, 500, 503),
          },
        },
        post: {
          operationId: 'publishWorkflow',
          summary: 'Publish a workflow graph (a new workflow, or the next version of its slug)',
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/WorkflowDocument' } },
            },
          },
          responses: {
            '201': {
              ...json('PublishedWorkflow', 'Published.'),
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
        post: {
          operationId: 'uploadFile',
          summary:
            'Upload a file (D19): the raw body, or the first file part of a multipart form; streamed, 100 MiB at most by default',
          parameters: [
            {
              name: 'name',
              in: 'query',
              required: false,
              schema: { type: 'string' },
              description:
                'File name (default: the multipart part’s filename); directories, control characters and quotes are dropped, and it is cut to 255 characters.',
            },
          ],
          requestBody: {
            required: true,
            content: {
              // An empty file is refused (400 `empty_file`).
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  required: ['file'],
                  properties: {
                    file: {
                      type: 'string',
                      minLength: 1,
                      contentMediaType: 'application/octet-stream',
                    },
                  },
                },
              },
              '*/*': {
                schema: {
                  type: 'string',
                  minLength: 1,
                  contentMediaType: 'application/octet-stream',
                },
              },
            },
          },
          responses: {
            '201': {
              ...json('File', 'Stored; `mime_type` is sniffed from the bytes.'),
              headers: rateHeaders,
              links: {
                GetFile: { operationId: 'getFile', parameters: { fileId: '$response.body#/id' } },
              },
            },
            ...errors(400, 401, 413, 429, 500, 503),
          },
        },
      },
      '/api/v1/files/{fileId}': {
        get: {
          operationId: 'getFile',
          summary: 'A file of your account, with a fresh signed link',
          parameters: [fileIdParam],
          responses: {
            '200': { ...json('File', 'The file.'), headers: rateHeaders },
            ...errors(401, 404, 429, 500, 503),
          },
        },
      },
      '/files/{fileId}/content': {
        get: {
          operationId: 'getFileContent',
          summary:
            'The bytes behind a signed link (no Authorization header); single byte ranges supported',
          security: [],
          parameters: [
            fileIdParam,
            ...signedLinkParams('the id'),
            {
              name: 'Range',
              in: 'header',
              required: false,
              schema: { type: 'string', example: 'bytes=0-1023' },
            },
          ],
          responses: {
            '200': {
              description: 'The whole file, with its sniffed Content-Type.',
              content: {
                '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } },
              },
            },
            '206': {
              description: 'The requested byte range (`Content-Range`).',
              content: {
                '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } },
              },
            },
            ...errors(403, 404, 416, 500),
          },
        },
      },
      '/api/v1/openapi.json': {
        get: {
          operationId: 'openapi',
          summary: 'This OpenAPI 3.1 document (D25)',
          security: [],
          responses: {
            '200': {
              description: 'This document.',
              content: { 'application/json': { schema: { type: 'object' } } },
            },
          },
        },
      },
      '/metrics': {
        get: {
          operationId: 'metrics',
          summary: 'Prometheus metrics of this process',
          security: [],
          responses: {
            '200': {
              description: 'Prometheus exposition format.',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
          },
        },
      },
      '/': {
        get: {
          operationId: 'playground',
          summary: 'The playground: try any published workflow in a browser',
          security: [],
          responses: {
            '200': {
              description:
                'The page (`Cache-Control: no-cache`, an `ETag`, a strict Content-Security-Policy).',
              content: { 'text/html': { schema: { type: 'string' } } },
            },
            '304': { description: 'Not modified (`If-None-Match` matched the ETag).' },
          },
        },
      },
      '/playground/{asset}': {
        get: {
          operationId: 'playgroundAsset',
          summary:
            'A script or stylesheet of the playground; the name holds its content hash, so it is cached for a year',
          security: [],
          parameters: [
            {
              name: 'asset',
              in: 'path',
              required: true,
              schema: { type: 'string', example: 'app.3f2a9c1d0b7e.js' },
            },
          ],
          responses: {
            '200': {
              description: 'The file.',
              content: {
                'text/javascript': { schema: { type: 'string' } },
                'text/css': { schema: { type: 'string' } },
              },
            },
            ...errors(404),
          },
        },
      },
      '/healthz': {
        get: {
          operationId: 'health',
          summary: 'Liveness: the process runs',
          security: [],
          responses: { '200': probe('ok', 'The process runs.') },
        },
      },
      '/readyz': {
        get: {
          operationId: 'ready',
          summary: 'Readiness: MongoDB answers (Temporal reported in the body)',
          security: [],
          responses: {
            '200': probe(
              'ready',
              'MongoDB answers. `temporal` says whether Temporal does (`ok`, `unavailable`): starts need it, reads of finished runs do not.',
            ),
            ...errors(503),
          },
        },
      },
      ...codecPaths(),
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key `wrs_sk_...` (D6).' },
        codecToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            "The operators' codec token (`CODEC_TOKEN`, D32); API keys are not accepted.",
        },
      },
      schemas: {
        StartRequest: requestSchema(StartRequestSchema),
        RerunRequest: requestSchema(RerunRequestSchema),
        AsyncStart: schemaOf(AsyncStartResponseSchema),
        Run: schemaOf(RunSchema),
        Error: schemaOf(ErrorEnvelopeSchema),
        PublishedWorkflow: schemaOf(PublishResponseSchema),
        RunList: schemaOf(RunListSchema),
        DeletedRun: schemaOf(DeletedRunSchema),
        OutputItemList: schemaOf(OutputItemListSchema),
        WorkflowContract: schemaOf(WorkflowContractSchema),
        WorkflowList: schemaOf(WorkflowListSchema),
        File: schemaOf(FileSchema),
        StreamEvent: schemaOf(StreamEventSchema),
        WorkflowDocument: requestSchema(WorkflowDocumentSchema),
        ServerSentEvent: serverSentEvent,
        StreamLinkRequest: requestSchema(StreamLinkRequestSchema),
        StreamLink: schemaOf(StreamLinkSchema),
        Payloads: schemaOf(PayloadsJsonSchema),
      },
    },
  };
}

/**
 * D32: the operators' codec server (Temporal's remote codec protocol), for the Temporal UI and
 * CLI; not for API callers. Each operation also exists with the token as a path segment, for a
 * UI that can be given an endpoint URL but no header.
 */
function codecPaths(): Json {
  const tokenParam = {
    name: 'token',
    in: 'path',
    required: true,
    schema: { type: 'string' },
    description: "The operators' codec token (`CODEC_TOKEN`).",
  };
  const operation = (op: 'decode' | 'encode', inPath: boolean) => ({
    post: {
      operationId: `codec${op[0].toUpperCase()}${op.slice(1)}${inPath ? 'WithPathToken' : ''}`,
      summary:
        op === 'decode'
          ? 'Opens sealed Temporal payloads (operators only)'
          : 'Seals Temporal payloads with the newest key (operators only)',
      tags: ['operators'],
      security: inPath ? [] : [{ codecToken: [] }],
      ...(inPath ? { parameters: [tokenParam] } : {}),
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Payloads' } } },
      },
      responses: {
        '200': json(
          'Payloads',
          op === 'decode'
            ? 'The payloads opened (payloads not sealed by this service are returned as they are).'
            : 'The payloads sealed.',
        ),
        ...errors(400, 413, 415),
        '401': {
          description:
            'Missing or wrong codec token (`authentication_error` / `invalid_codec_token`).',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
        ...errors(503),
      },
    },
  });
  return {
    '/codec/decode': operation('decode', false),
    '/codec/encode': operation('encode', false),
    '/codec/{token}/decode': operation('decode', true),
    '/codec/{token}/encode': operation('encode', true),
  };
}
