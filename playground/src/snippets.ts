/**
 * The current request as code to copy: curl (the raw API, streaming), TypeScript (clients/typescript/ of
 * this repository) and Python (the `wrs_client` package). The key is never copied: every
 * snippet reads it from the WRS_API_KEY environment variable.
 */
export interface RunRequest {
  workflowId: string;
  version?: number;
  inputs: Record<string, unknown>;
  /** D37: the caller's own key/value pairs. */
  metadata?: Record<string, string>;
  /** D36: the cost cap (USD) and the timeout (seconds). */
  max_cost?: number;
  timeout_seconds?: number;
  /** D36: absent is `normal`. */
  priority?: 'low' | 'normal' | 'high';
}

/** D36: the run controls that are set, as request fields. */
const controls = (r: RunRequest) => ({
  ...(r.max_cost !== undefined ? { max_cost: r.max_cost } : {}),
  ...(r.timeout_seconds !== undefined ? { timeout_seconds: r.timeout_seconds } : {}),
});

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export function curlSnippet(base: string, r: RunRequest): string {
  const body = JSON.stringify({
    workflowId: r.workflowId,
    ...(r.version ? { version: r.version } : {}),
    stream: true,
    inputs: r.inputs,
    ...(r.metadata ? { metadata: r.metadata } : {}),
    ...controls(r),
    ...(r.priority ? { priority: r.priority } : {}),
  });
  return [
    `curl -N ${base}/api/v1/responses`,
    `  -H "Authorization: Bearer $WRS_API_KEY"`,
    `  -H 'Content-Type: application/json'`,
    `  -d ${shellQuote(body)}`,
  ].join(' \\\n');
}

export function typescriptSnippet(base: string, r: RunRequest): string {
  const request = JSON.stringify(
    {
      workflowId: r.workflowId,
      ...(r.version ? { version: r.version } : {}),
      inputs: r.inputs,
      ...(r.metadata ? { metadata: r.metadata } : {}),
      ...controls(r),
      ...(r.priority ? { priority: r.priority } : {}),
    },
    null,
    2,
  );
  return `import { WrsClient } from './client';

const wrs = new WrsClient({ baseUrl: ${JSON.stringify(base)}, apiKey: process.env.WRS_API_KEY! });
const { run_id } = await wrs.start(${request});
const run = await wrs.wait(run_id); // completed | failed | cancelled
console.log(run.status, JSON.stringify(run.output, null, 2));
`;
}

/** A JSON value as a Python literal (true → True, null → None; strings stay JSON-escaped, which Python reads alike). */
function py(value: unknown, indent = ''): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (Array.isArray(value))
    return value.length ? `[${value.map((v) => py(v, indent)).join(', ')}]` : '[]';
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return '{}';
    const inner = `${indent}    `;
    return `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${py(v, inner)},`).join('\n')}\n${indent}}`;
  }
  return JSON.stringify(value);
}

/** The Python client's shape (clients/python): WrsClient(base_url, api_key=...), start(workflow_id, inputs=...), wait(run_id). */
export function pythonSnippet(base: string, r: RunRequest): string {
  const version = r.version ? `, version=${r.version}` : '';
  const metadata = r.metadata ? `, metadata=${py(r.metadata, '    ')}` : '';
  const cap = r.max_cost !== undefined ? `, max_cost=${r.max_cost}` : '';
  const timeout = r.timeout_seconds !== undefined ? `, timeout_seconds=${r.timeout_seconds}` : '';
  const priority = r.priority ? `, priority=${JSON.stringify(r.priority)}` : '';
  return `import os
from wrs_client import WrsClient

with WrsClient(${JSON.stringify(base)}, api_key=os.environ["WRS_API_KEY"]) as client:
    started = client.start(${JSON.stringify(r.workflowId)}, inputs=${py(r.inputs, '    ')}${version}${metadata}${cap}${timeout}${priority})
    run = client.wait(started["run_id"])
    print(run["status"], run.get("output"))
`;
}
