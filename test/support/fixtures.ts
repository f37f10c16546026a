/** Workflow documents and small flows shared by the API-surface tests (provider-free: text nodes only). */
import assert from 'node:assert/strict';
import { call, waitFor } from './http';

/** A one-input greeting workflow; `prefix` makes versions tell apart in their output. */
export function greetingWorkflow(
  slug: string,
  prefix = 'Hello',
  extra: Record<string, unknown> = {},
) {
  return {
    slug,
    name: `Greeting ${slug}`,
    ...extra,
    nodes: [
      { id: 'name', type: 'user_input', label: 'Name', input_type: 'text' },
      { id: 'greet', type: 'text', template: `${prefix}, {{name}}!` },
      { id: 'greeting', type: 'user_result', label: 'Greeting' },
    ],
    edges: [
      { from: 'name', to: 'greet', port: 'name' },
      { from: 'greet', to: 'greeting' },
    ],
  };
}

/** Inputs of every scalar type (D4), one of them optional with a default. */
export function typedInputsWorkflow(slug: string) {
  return {
    slug,
    nodes: [
      { id: 'product', type: 'user_input', label: 'Product Name', input_type: 'text' },
      { id: 'count', type: 'user_input', label: 'Count', input_type: 'number' },
      { id: 'flag', type: 'user_input', label: 'Gift Wrap?', input_type: 'boolean' },
      {
        id: 'tone',
        type: 'user_input',
        label: 'Tone',
        input_type: 'text',
        required: false,
        default: 'friendly',
      },
      { id: 'line', type: 'text', template: '{{product_name}}|{{count}}|{{gift_wrap}}|{{tone}}' },
      { id: 'out', type: 'user_result', label: 'Line' },
    ],
    edges: [
      { from: 'product', to: 'line', port: 'product_name' },
      { from: 'count', to: 'line', port: 'count' },
      { from: 'flag', to: 'line', port: 'gift_wrap' },
      { from: 'tone', to: 'line', port: 'tone' },
      { from: 'line', to: 'out' },
    ],
  };
}

/**
 * Rows (a JSON input, or with `extra.input_type: 'file'` a file's rows) → batch → `node` once per
 * row (its port `row`) → one result labelled `label` (id `out`).
 */
function rowsThrough(
  slug: string,
  node: { id: string; type: string } & Record<string, unknown>,
  label: string,
  extra: Record<string, unknown>,
) {
  const { input_type = 'json', ...fields } = extra;
  return {
    slug,
    ...fields,
    nodes: [
      { id: 'rows', type: 'user_input', label: 'Rows', input_type },
      { id: 'split', type: 'batch' },
      node,
      { id: 'out', type: 'user_result', label },
    ],
    edges: [
      { from: 'rows', to: 'split', port: 'rows' },
      { from: 'split', to: node.id, port: 'row' },
      { from: node.id, to: 'out' },
    ],
  };
}

/**
 * Rows (json input) → batch → one `gpt-test` llm call per row (`prompt`, `{{row}}` is the row) →
 * result "Answers": the batch runs of the crash and big-run tests. `extra` adds document fields (`concurrency`).
 */
export function rowsWorkflow(
  slug: string,
  prompt = '{{row}}',
  extra: Record<string, unknown> = {},
) {
  return rowsThrough(slug, { id: 'ask', type: 'llm', model: 'gpt-test', prompt }, 'Answers', extra);
}

/** Rows (a JSON input) → batch → a `text` node (`say`) filling `template` per row → result "Out". */
export function textRowsWorkflow(
  slug: string,
  template: string,
  extra: Record<string, unknown> = {},
) {
  return rowsThrough(slug, { id: 'say', type: 'text', template }, 'Out', extra);
}

/** A batch of fixed `rows` → one `gpt-test` llm call per row (`prompt`) → one result (`label`): the fake's directives go in the rows. */
export function batchWorkflow(slug: string, rows: string[], prompt = '{{row}}', label = 'Answers') {
  return {
    slug,
    nodes: [
      { id: 'rows', type: 'batch', rows },
      { id: 'ask', type: 'llm', model: 'gpt-test', prompt },
      { id: 'out', type: 'user_result', label },
    ],
    edges: [
      { from: 'rows', to: 'ask', port: 'row' },
      { from: 'ask', to: 'out' },
    ],
  };
}

/** Publishes and asserts 201; returns the publish response body. */
export async function publish(url: string, key: string, doc: unknown): Promise<any> {
  const res = await call(url, 'POST', '/api/v1/workflows', { key, body: doc });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** Polls a run until it is terminal and returns its record. */
export async function waitForRun(
  url: string,
  key: string,
  runId: string,
  timeoutMs = 30_000,
): Promise<any> {
  return waitFor(
    async () => {
      const r = await call(url, 'GET', `/api/v1/runs/${runId}`, { key });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
    },
    { timeoutMs, intervalMs: 100, what: `run ${runId} to end` },
  );
}

/** The text of the first part of the first item of an output key. */
export function firstText(run: any, key: string): string {
  assert.equal(run.status, 'completed', JSON.stringify(run));
  return run.output?.[key]?.[0]?.parts?.[0]?.text;
}

/** Topic (text input) → one llm call (`gpt-test`, prompt `{{topic}}`) → result "Answer": the fake's directives go in the topic. */
export function llmWorkflow(slug: string) {
  return {
    slug,
    nodes: [
      { id: 'topic', type: 'user_input', label: 'Topic', input_type: 'text' },
      { id: 'ask', type: 'llm', model: 'gpt-test', prompt: '{{topic}}' },
      { id: 'out', type: 'user_result', label: 'Answer' },
    ],
    edges: [
      { from: 'topic', to: 'ask', port: 'topic' },
      { from: 'ask', to: 'out' },
    ],
  };
}

/** Topic → one llm call with a prompt of the workflow's own → result "Answer": every kind of customer data in one run (D32 tests). */
export function promptWorkflow(slug: string, prompt: string) {
  return {
    slug,
    nodes: [
      { id: 'topic', type: 'user_input', label: 'Topic', input_type: 'text' },
      { id: 'ask', type: 'llm', model: 'gpt-test', prompt: `${prompt} {{topic}}` },
      { id: 'out', type: 'user_result', label: 'Answer' },
    ],
    edges: [
      { from: 'topic', to: 'ask', port: 'topic' },
      { from: 'ask', to: 'out' },
    ],
  };
}
