import assert from 'node:assert/strict';
import { deriveContract, inputsJsonSchema, type Contract } from '../../domain/contract';
import { WorkflowDocumentSchema } from '../../domain/graph';

const doc = WorkflowDocumentSchema.parse({
  slug: 'all-types',
  nodes: [
    { id: 'r_first', type: 'user_result', label: 'First Result' },
    {
      id: 'a',
      type: 'user_input',
      label: 'Product Name',
      input_type: 'text',
      description: 'What we sell.',
    },
    {
      id: 'b',
      type: 'user_input',
      label: 'Count',
      input_type: 'number',
      required: false,
      default: 3,
    },
    { id: 'c', type: 'user_input', label: 'Dry run?', input_type: 'boolean', required: false },
    {
      id: 'd',
      type: 'user_input',
      label: 'Options',
      input_type: 'json',
      required: true,
      default: { x: 1 },
    },
    {
      id: 'e',
      type: 'user_input',
      label: 'Hero Image (4:3)',
      input_type: 'image',
      description: 'Main shot.',
    },
    { id: 'f', type: 'user_input', label: 'Clip', input_type: 'video', required: false },
    { id: 'g', type: 'user_input', label: 'Spec Sheet', input_type: 'file' },
    { id: 'r_second', type: 'user_result', label: 'Second  Result' },
  ],
  edges: [],
});

describe('contract', () => {
  it('derives inputs and outputs in node order, keyed by normalized label', () => {
    const contract = deriveContract(doc);
    assert.deepEqual(contract, {
      inputs: [
        {
          key: 'product_name',
          label: 'Product Name',
          node_id: 'a',
          type: 'text',
          required: true,
          description: 'What we sell.',
        },
        { key: 'count', label: 'Count', node_id: 'b', type: 'number', required: false, default: 3 },
        { key: 'dry_run', label: 'Dry run?', node_id: 'c', type: 'boolean', required: false },
        {
          key: 'options',
          label: 'Options',
          node_id: 'd',
          type: 'json',
          required: true,
          default: { x: 1 },
        },
        {
          key: 'hero_image_4_3',
          label: 'Hero Image (4:3)',
          node_id: 'e',
          type: 'image',
          required: true,
          description: 'Main shot.',
        },
        { key: 'clip', label: 'Clip', node_id: 'f', type: 'video', required: false },
        { key: 'spec_sheet', label: 'Spec Sheet', node_id: 'g', type: 'file', required: true },
      ],
      outputs: [
        { key: 'first_result', label: 'First Result', node_id: 'r_first' },
        { key: 'second_result', label: 'Second  Result', node_id: 'r_second' },
      ],
    } satisfies Contract);
  });

  it('builds the JSON Schema of `inputs` for a form', () => {
    const schema = inputsJsonSchema(deriveContract(doc)) as {
      $schema: string;
      type: string;
      properties: Record<string, Record<string, unknown>>;
      required: string[];
      additionalProperties: boolean;
    };
    assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
    assert.equal(schema.type, 'object');
    assert.equal(schema.additionalProperties, false);
    // `options` is required but has a default, so a caller may leave it out.
    assert.deepEqual(schema.required, ['product_name', 'hero_image_4_3', 'spec_sheet']);
    assert.deepEqual(Object.keys(schema.properties), [
      'product_name',
      'count',
      'dry_run',
      'options',
      'hero_image_4_3',
      'clip',
      'spec_sheet',
    ]);
    const p = schema.properties;
    assert.deepEqual(p.product_name, {
      title: 'Product Name',
      type: 'string',
      description: 'What we sell.',
      'x-input-type': 'text',
    });
    assert.deepEqual(p.count, {
      title: 'Count',
      type: 'number',
      default: 3,
      'x-input-type': 'number',
    });
    assert.deepEqual(p.dry_run, { title: 'Dry run?', type: 'boolean', 'x-input-type': 'boolean' });
    assert.deepEqual(p.options, { title: 'Options', default: { x: 1 }, 'x-input-type': 'json' });
    assert.equal(p.hero_image_4_3.type, 'string');
    assert.equal(p.hero_image_4_3.description, 'Main shot. A file_... id or https URL.');
    assert.equal(p.clip.description, 'A file_... id or https URL.');
    assert.equal(p.spec_sheet['x-input-type'], 'file');
  });

  it('is an empty object schema for a workflow without inputs', () => {
    assert.deepEqual(inputsJsonSchema({ inputs: [], outputs: [] }), {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {},
      required: [],
      additionalProperties: false,
    });
  });
});
