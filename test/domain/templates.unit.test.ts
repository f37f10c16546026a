import assert from 'node:assert/strict';
import { inputPorts, NodeSchema } from '../../domain/graph';
import { placeholders, renderTemplate } from '../../domain/templates';

describe('templates', () => {
  it('placeholders are unique, in order of first use, with optional spaces', () => {
    assert.deepEqual(placeholders('{{b}} {{ a }} {{b}} {{  c_1  }}'), ['b', 'a', 'c_1']);
    assert.deepEqual(placeholders('no placeholders'), []);
  });

  it('ignores malformed placeholders', () => {
    assert.deepEqual(placeholders('{{1a}} {{a-b}} {a} {{ }} {{a b}} {{_ok}}'), ['_ok']);
  });

  it('renders values and leaves missing ones empty', () => {
    assert.equal(
      renderTemplate('Hello, {{name}}! {{ missing }}.', { name: 'Ada' }),
      'Hello, Ada! .',
    );
    assert.equal(renderTemplate('{{a}}{{a}}', { a: 'x' }), 'xx');
  });

  it('does not interpret replacement patterns or inherited properties', () => {
    assert.equal(renderTemplate('{{a}}', { a: '$& $1 $$' }), '$& $1 $$');
    assert.equal(renderTemplate('[{{constructor}}][{{toString}}]', {}), '[][]');
  });

  it('inputPorts lists what each node type accepts', () => {
    const ports = (node: unknown) => inputPorts(NodeSchema.parse(node));
    assert.deepEqual(ports({ id: 'i', type: 'user_input', label: 'A', input_type: 'text' }), []);
    assert.deepEqual(ports({ id: 'r', type: 'user_result', label: 'A' }), ['in']);
    assert.deepEqual(ports({ id: 's', type: 'select', index: -1 }), ['in']);
    assert.deepEqual(ports({ id: 'j', type: 'join' }), ['in']);
    assert.deepEqual(ports({ id: 'b', type: 'batch', rows: [1] }), ['rows']);
    assert.deepEqual(ports({ id: 't', type: 'text', template: '{{x}} {{y}}' }), ['x', 'y']);
    assert.deepEqual(
      ports({
        id: 'l',
        type: 'llm',
        model: 'm',
        system: 'be {{tone}}',
        prompt: '{{topic}} {{tone}}',
      }),
      ['tone', 'topic'],
    );
    assert.deepEqual(
      ports({ id: 'g', type: 'image_generation', model: 'm', prompt: 'a {{thing}}' }),
      ['thing'],
    );
    assert.deepEqual(
      ports({
        id: 'm',
        type: 'model',
        model: 'owner/name',
        input: { prompt: '{{a}}', nested: { list: ['{{b}}', 3, { c: '{{c}}' }] }, n: 2 },
      }),
      ['a', 'b', 'c'],
    );
    assert.deepEqual(
      ports({
        id: 'h',
        type: 'http_request',
        url: 'https://x/{{path}}',
        headers: { Authorization: 'Bearer {{token}}' },
        body: '{{payload}}',
      }),
      ['path', 'token', 'payload'],
    );
  });
});
