// The published workflow document (D26). This zod schema is the single source of truth:
// validation, the TypeScript types and docs/workflow.schema.json all derive from it.
import { z } from 'zod';
import { normalizeLabel } from './labels';
import { placeholders } from './templates';

export const INPUT_TYPES = ['text', 'number', 'boolean', 'json', 'image', 'video', 'file'] as const;

const PORT_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const NODE_ID = /^[A-Za-z0-9_-]+$/;
const SLUG = /^[a-z0-9][a-z0-9-]*$/;

const nodeId = z
  .string()
  .min(1)
  .max(64)
  .regex(NODE_ID, { message: 'must contain only letters, digits, `_` and `-`' });

const label = z.string().max(200).meta({
  description:
    'Shown to callers; its normalized form (NFKC, lower-case, non-alphanumeric runs → `_`) is the API key.',
});

const template = (what: string, nonEmpty = false) =>
  (nonEmpty ? z.string().min(1) : z.string()).meta({
    description: `${what}; \`{{ name }}\` placeholders become input ports (\`{{ name.field }}\`, \`{{ name["a key"] }}\`: a value inside the port's JSON).`,
  });

// Strict objects so that a misspelt field (`temprature`) is reported instead of ignored;
// builders keep their own data (canvas positions ...) under `meta`.
const base = {
  id: nodeId.meta({ description: 'Unique inside the workflow; edges refer to it.' }),
  name: z
    .string()
    .max(200)
    .optional()
    .meta({ description: 'Display name, not used by the service.' }),
  meta: z
    .record(z.string(), z.unknown())
    .optional()
    .meta({ description: 'Free-form data of the builder; ignored by the service.' }),
};

const UserInputNodeSchema = z
  .strictObject({
    ...base,
    type: z.literal('user_input'),
    label,
    input_type: z.enum(INPUT_TYPES),
    required: z.boolean().default(true),
    default: z
      .unknown()
      .optional()
      .meta({ description: 'Used when the caller leaves the input out.' }),
    description: z.string().max(2000).optional(),
  })
  .meta({ title: 'user_input', description: 'A named input of every run.' });

const UserResultNodeSchema = z
  .strictObject({ ...base, type: z.literal('user_result'), label })
  .meta({ title: 'user_result', description: 'Its items become `output[<normalized label>]`.' });

const TextNodeSchema = z
  .strictObject({ ...base, type: z.literal('text'), template: template('Text to produce') })
  .meta({ title: 'text', description: 'One text part per iteration.' });

const BatchNodeSchema = z
  .strictObject({
    ...base,
    type: z.literal('batch'),
    rows: z
      .array(z.unknown())
      .optional()
      .meta({ description: 'Rows given in the node; an edge into port `rows` overrides them.' }),
  })
  .meta({ title: 'batch', description: 'One item per row.' });

const SelectNodeSchema = z
  .strictObject({
    ...base,
    type: z.literal('select'),
    index: z
      .number()
      .int()
      .meta({ description: 'Position of the item; negative counts from the end.' }),
  })
  .meta({ title: 'select', description: 'The one item at `index` of its input list.' });

const JoinNodeSchema = z
  .strictObject({ ...base, type: z.literal('join'), separator: z.string().default('\n') })
  .meta({
    title: 'join',
    description: 'One item: texts joined with `separator`, other parts concatenated.',
  });

const LlmNodeSchema = z
  .strictObject({
    ...base,
    type: z.literal('llm'),
    provider: z.string().min(1).default('openai'),
    model: z.string().min(1),
    system: template('System message').optional(),
    prompt: template('User message'),
    temperature: z.number().min(0).max(2).optional(),
    max_tokens: z.number().int().positive().optional(),
    output: z.enum(['text', 'json', 'list']).default('text'),
    json_schema: z.record(z.string(), z.unknown()).optional().meta({
      description: '`json`: schema of the answer. `list`: schema of one element (default: string).',
    }),
  })
  .meta({ title: 'llm', description: 'A chat completion per iteration.' });

const ImageGenerationNodeSchema = z
  .strictObject({
    ...base,
    type: z.literal('image_generation'),
    provider: z.string().min(1).default('openai'),
    model: z.string().min(1),
    prompt: template('Image prompt'),
    size: z.string().min(1).optional().meta({ description: 'For example `1024x1024`.' }),
    n: z.number().int().min(1).max(10).default(1),
  })
  .meta({
    title: 'image_generation',
    description: 'One item holding `n` image parts per iteration.',
  });

const ModelNodeSchema = z
  .strictObject({
    ...base,
    type: z.literal('model'),
    provider: z.string().min(1).default('replicate'),
    model: z
      .string()
      .min(1)
      .optional()
      .meta({ description: '`owner/name`; exactly one of `model`, `version`.' }),
    version: z.string().min(1).optional().meta({ description: 'A model version id.' }),
    input: z
      .record(z.string(), z.unknown())
      .meta({ description: 'Prediction input; string values (at any depth) are templates.' }),
  })
  .superRefine((n, ctx) => {
    if (n.model === undefined && n.version === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['model'],
        message: 'is required unless `version` is given',
      });
    } else if (n.model !== undefined && n.version !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['version'],
        message: 'must not be given together with `model`',
      });
    }
  })
  .meta({ title: 'model', description: 'A hosted-model prediction per iteration.' });

const HttpRequestNodeSchema = z
  .strictObject({
    ...base,
    type: z.literal('http_request'),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('GET'),
    url: template('Absolute URL', true),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .meta({ description: 'Header values are templates.' }),
    body: template('Request body').optional(),
    timeout_ms: z.number().int().min(1).max(600000).optional(),
  })
  .meta({ title: 'http_request', description: 'One HTTP request per iteration.' });

export const NodeSchema = z.discriminatedUnion('type', [
  UserInputNodeSchema,
  UserResultNodeSchema,
  TextNodeSchema,
  BatchNodeSchema,
  SelectNodeSchema,
  JoinNodeSchema,
  LlmNodeSchema,
  ImageGenerationNodeSchema,
  ModelNodeSchema,
  HttpRequestNodeSchema,
]);

export const EdgeSchema = z
  .strictObject({
    from: nodeId.meta({ description: 'Id of the node whose output list the edge carries.' }),
    to: nodeId.meta({ description: 'Id of the receiving node.' }),
    port: z
      .string()
      .regex(PORT_NAME, { message: 'must be a letter or `_` followed by letters, digits or `_`' })
      .default('in')
      .meta({ description: 'Input port of the receiving node.' }),
  })
  .meta({ title: 'edge' });

/** The most nodes and edges a workflow may have (D26); the graph checks rely on them as bounds. */
export const MAX_NODES = 500;
export const MAX_EDGES = 2000;

export const WorkflowDocumentSchema = z
  .strictObject({
    slug: z
      .string()
      .min(1)
      .max(64)
      .regex(SLUG, {
        message: 'must be lower-case letters, digits and `-`, starting with a letter or digit',
      })
      .meta({ description: 'API slug; publishing an existing slug adds a version.' }),
    name: z.string().max(200).optional(),
    description: z.string().max(5000).optional(),
    public: z.boolean().optional().meta({ description: 'Other accounts may run it by id (D2).' }),
    meta: base.meta,
    concurrency: z.int().min(1).max(1000).optional().meta({
      description:
        "Provider calls a run of this workflow makes at once (default: the service's RUN_CONCURRENCY, capped by RUN_MAX_CONCURRENCY).",
    }),
    nodes: z.array(NodeSchema).min(1).max(MAX_NODES),
    edges: z.array(EdgeSchema).max(MAX_EDGES),
  })
  .meta({
    title: 'Workflow document',
    description: 'A published workflow: nodes and the edges between them.',
  });

/** A parsed workflow: defaults applied (`required`, `port`, `provider`, ...). */
export type WorkflowDocument = z.infer<typeof WorkflowDocumentSchema>;
/** A workflow as written by its author: fields with defaults may be left out. */
export type WorkflowDocumentInput = z.input<typeof WorkflowDocumentSchema>;
export type GraphNode = z.infer<typeof NodeSchema>;
export type GraphEdge = z.infer<typeof EdgeSchema>;
export type NodeType = GraphNode['type'];
export type InputType = (typeof INPUT_TYPES)[number];
export type NodeOfType<T extends NodeType> = Extract<GraphNode, { type: T }>;

/** The distinct names of `lists`, in order of first appearance (no spread: a list may hold 300,000). */
function union(lists: readonly string[][]): string[] {
  const seen = new Set<string>();
  for (const list of lists) for (const name of list) seen.add(name);
  return [...seen];
}

function placeholdersDeep(value: unknown): string[] {
  return union(stringsIn(value).map(placeholders));
}

/** D31/D35: the keys of the User Inputs that feed a batch's `rows`: given a `file_...` id, the run reads that file's rows. */
export function rowsInputKeys(graph: WorkflowDocument): Set<string> {
  const batches = new Set(graph.nodes.filter((n) => n.type === 'batch').map((n) => n.id));
  const feeding = new Set(
    graph.edges.filter((e) => e.port === 'rows' && batches.has(e.to)).map((e) => e.from),
  );
  const keys = new Set<string>();
  for (const node of graph.nodes)
    if (node.type === 'user_input' && feeding.has(node.id)) keys.add(normalizeLabel(node.label));
  return keys;
}

/** Every template string of a node, with the field that holds it (a model's input: every string in it). */
export function nodeTemplates(node: GraphNode): [field: string, template: string][] {
  switch (node.type) {
    case 'text':
      return [['template', node.template]];
    case 'llm':
      return [
        ['prompt', node.prompt],
        ['system', node.system ?? ''],
      ];
    case 'image_generation':
      return [['prompt', node.prompt]];
    case 'model':
      return [['input', stringsIn(node.input).join('\n')]];
    case 'http_request':
      return [
        ['url', node.url],
        ['body', node.body ?? ''],
        ['headers', Object.values(node.headers ?? {}).join('\n')],
      ];
    default:
      return [];
  }
}

function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(stringsIn);
  return [];
}

/** The input ports a node accepts, in order: template placeholders, `rows`, `in`, or none. */
export function inputPorts(node: GraphNode): string[] {
  switch (node.type) {
    case 'user_input':
      return [];
    case 'user_result':
    case 'select':
    case 'join':
      return ['in'];
    case 'batch':
      return ['rows'];
    case 'text':
      return placeholders(node.template);
    case 'llm':
      return union([placeholders(node.system ?? ''), placeholders(node.prompt)]);
    case 'image_generation':
      return placeholders(node.prompt);
    case 'model':
      return placeholdersDeep(node.input);
    case 'http_request':
      return union([
        placeholders(node.url),
        ...Object.values(node.headers ?? {}).map(placeholders),
        placeholders(node.body ?? ''),
      ]);
  }
}

/** The ports that must be fed by an edge: all of them, except `rows` of a batch that has rows of its own. */
export function requiredPorts(node: GraphNode): string[] {
  if (node.type === 'batch') return node.rows === undefined ? ['rows'] : [];
  return inputPorts(node);
}
