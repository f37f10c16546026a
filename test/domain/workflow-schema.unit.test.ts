import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { workflowJsonSchema, workflowJsonSchemaText } from '../../domain/workflow-json-schema';

const file = path.join(__dirname, '..', '..', 'docs', 'workflow.schema.json');

describe('docs/workflow.schema.json', () => {
  it('equals the schema generated from WorkflowDocumentSchema', () => {
    assert.equal(
      fs.readFileSync(file, 'utf8'),
      workflowJsonSchemaText(),
      'regenerate with: npx tsx tools/scripts/print-workflow-schema.ts > docs/workflow.schema.json',
    );
  });

  it('is a draft 2020-12 schema that lets authors omit defaulted fields', () => {
    const schema = workflowJsonSchema() as {
      $schema: string;
      required: string[];
      properties: {
        nodes: {
          items: { oneOf: { properties: { type: { const: string } }; required: string[] }[] };
        };
      };
    };
    assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
    assert.deepEqual(schema.required, ['slug', 'nodes', 'edges']);
    const variants = schema.properties.nodes.items.oneOf;
    const input = variants.find((v) => v.properties.type.const === 'user_input');
    assert.ok(input && !input.required.includes('required'));
    assert.equal(variants.length, 10);
  });
});
