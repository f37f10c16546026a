import assert from 'node:assert/strict';
import { inputPorts, NodeSchema } from '../../domain/graph';
import {
  placeholders,
  renderTemplate,
  TemplateTooLarge,
  templateFiller,
} from '../../domain/templates';
import { completed, itemLookup } from '../../domain/items';

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

  it('a placeholder with a path is a placeholder of its port', () => {
    assert.deepEqual(placeholders('{{ row.name }} {{row["First Name"]}} {{row.tags.0}} {{ q }}'), [
      'row',
      'q',
    ]);
    // Not placeholders: a step that is no key, a bracket without a quoted key, a space before a step.
    assert.deepEqual(placeholders('{{row.}} {{row[0]}} {{row .a}} {{row.a b}} {{row.a.}}'), []);
  });

  it("renders a path into the port's JSON value: strings as they are, other values as JSON, nothing for a miss", () => {
    const row = completed({
      type: 'json',
      data: {
        name: 'Ada',
        'First Name': 'Ada L.',
        age: 36,
        tags: ['x', 'y'],
        addr: { city: 'London' },
        none: null,
      },
    });
    const values = itemLookup({ row, note: completed({ type: 'text', text: 'plain' }) });
    assert.equal(
      renderTemplate(
        '{{row.name}}|{{ row["First Name"] }}|{{row.age}}|{{row.tags.1}}|{{row.addr}}|{{row.addr.city}}|{{row.none}}',
        values,
      ),
      'Ada|Ada L.|36|y|{"city":"London"}|London|null',
    );
    assert.equal(
      renderTemplate(
        '[{{row.missing}}][{{row.tags.5}}][{{row.name.first}}][{{note.x}}][{{absent.x}}]',
        values,
      ),
      '[][][][][]',
    );
    // Own properties only, at every step; escapes in a bracketed key are JSON's.
    assert.equal(
      renderTemplate('[{{row.constructor}}][{{row.addr.toString}}][{{row.tags.map}}]', values),
      '[][][]',
    );
    // An array's own `length` is no key of its JSON (it rendered 2); a string's neither.
    assert.equal(renderTemplate('[{{row.tags.length}}][{{row.name.length}}]', values), '[][]');
    const quoted = itemLookup({ row: completed({ type: 'json', data: { 'say "hi"': 'ok' } }) });
    assert.equal(renderTemplate('{{row["say \\"hi\\""]}}', quoted), 'ok');
    // A plain record of texts has no values inside: a path renders empty.
    assert.equal(renderTemplate('{{a}}{{a.b}}', { a: 'x' }), 'x');
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

  describe('bounds', () => {
    it('fills a template up to exactly its bound, counting the text around placeholders', () => {
      assert.equal(renderTemplate('<{{a}}>', { a: 'xyz' }, 5), '<xyz>');
      assert.throws(() => renderTemplate('<{{a}}>', { a: 'xyz' }, 4), TemplateTooLarge);
      assert.throws(() => renderTemplate('a long text, no placeholder', {}, 4), TemplateTooLarge);
    });

    it('stops at the first placeholder past the bound: a million copies of a large value are never built', () => {
      let looked = 0;
      const lookup = () => (looked++, 'x'.repeat(100_000));
      assert.throws(
        () => renderTemplate('{{a}}'.repeat(1_000_000), lookup, 1024 * 1024),
        (err: Error) =>
          err instanceof TemplateTooLarge &&
          err.message === 'the filled template would pass 1048576 characters, the most it may hold',
      );
      assert.equal(looked, 11);
    });

    it("shares one bound between a request's templates, and names the whole bound", () => {
      const fill = templateFiller(() => 'abc', 10);
      assert.equal(fill('{{a}}{{a}}'), 'abcabc');
      assert.equal(fill('{{a}}'), 'abc');
      assert.throws(() => fill('{{a}}'), /would pass 10 characters/);
    });
  });
});
