// The run contract of a workflow: which `inputs` keys a start request takes and which
// `output` keys a run returns (spec "Start request body", D3, D24).
import type { InputType, WorkflowDocument } from './graph';
import { normalizeLabel } from './labels';

export type ContractInput = {
  /** Normalized label: the key in `inputs`. */
  key: string;
  label: string;
  node_id: string;
  type: InputType;
  required: boolean;
  default?: unknown;
  description?: string;
};

export type ContractOutput = {
  /** Normalized label: the key in `output`. */
  key: string;
  label: string;
  node_id: string;
};

export type Contract = { inputs: ContractInput[]; outputs: ContractOutput[] };

/** The inputs and outputs of a parsed workflow, in node order. */
export function deriveContract(graph: WorkflowDocument): Contract {
  const contract: Contract = { inputs: [], outputs: [] };
  for (const node of graph.nodes) {
    if (node.type === 'user_input') {
      const input: ContractInput = {
        key: normalizeLabel(node.label),
        label: node.label,
        node_id: node.id,
        type: node.input_type,
        required: node.required,
      };
      if (node.default !== undefined) input.default = node.default;
      if (node.description !== undefined) input.description = node.description;
      contract.inputs.push(input);
    } else if (node.type === 'user_result') {
      contract.outputs.push({
        key: normalizeLabel(node.label),
        label: node.label,
        node_id: node.id,
      });
    }
  }
  return contract;
}

const FILE_REFERENCE = 'A file_... id or https URL.';

function propertySchema(input: ContractInput): Record<string, unknown> {
  const schema: Record<string, unknown> = { title: input.label };
  switch (input.type) {
    case 'text':
      schema.type = 'string';
      break;
    case 'number':
      schema.type = 'number';
      break;
    case 'boolean':
      schema.type = 'boolean';
      break;
    case 'json':
      break; // any JSON value
    case 'image':
    case 'video':
    case 'file':
      schema.type = 'string';
      break;
  }
  const isFile = input.type === 'image' || input.type === 'video' || input.type === 'file';
  const description = isFile
    ? [input.description, FILE_REFERENCE].filter((s) => s !== undefined && s !== '').join(' ')
    : input.description;
  if (description !== undefined) schema.description = description;
  if (input.default !== undefined) schema.default = input.default;
  // Lets a form builder choose a file picker; unknown keywords are ignored by validators.
  schema['x-input-type'] = input.type;
  return schema;
}

/** JSON Schema (draft 2020-12) of the start request's `inputs` object for this contract (D24). */
export function inputsJsonSchema(contract: Contract): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const input of contract.inputs) {
    properties[input.key] = propertySchema(input);
    // A required input with a default is filled in by the service, so the caller may omit it.
    if (input.required && input.default === undefined) required.push(input.key);
  }
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties,
    required,
    additionalProperties: false,
  };
}
