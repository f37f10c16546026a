// docs/workflow.schema.json is generated from WorkflowDocumentSchema; a test keeps the
// committed file equal to this output.
import { z } from 'zod';
import { WorkflowDocumentSchema } from './graph';

/** The JSON Schema (draft 2020-12) of a workflow document as authors write it (defaults optional). */
export function workflowJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(WorkflowDocumentSchema, { io: 'input', target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
}

/** The exact text of docs/workflow.schema.json. */
export function workflowJsonSchemaText(): string {
  return `${JSON.stringify(workflowJsonSchema(), null, 2)}\n`;
}
