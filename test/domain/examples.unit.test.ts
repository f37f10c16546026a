import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { validateInputs } from '../../domain/inputs';
import { validateGraph } from '../../domain/validate-graph';

const dir = path.join(__dirname, '..', '..', 'examples');
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();

describe('examples/', () => {
  it('holds the documented examples', () => {
    for (const f of [
      'hello.json',
      'product-copy.json',
      'batch-summaries.json',
      'ideas-list.json',
      'fetch-json.json',
    ]) {
      assert.ok(files.includes(f), `${f} is missing`);
    }
  });

  for (const file of files) {
    it(`${file} is a valid workflow whose slug matches its file name`, () => {
      const r = validateGraph(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')));
      assert.ok(r.ok, JSON.stringify(r, null, 1));
      assert.equal(`${r.graph.slug}.json`, file);
    });
  }

  it('hello takes `name` and returns `greeting`', () => {
    const r = validateGraph(JSON.parse(fs.readFileSync(path.join(dir, 'hello.json'), 'utf8')));
    assert.ok(r.ok);
    assert.deepEqual(
      r.contract.inputs.map((i) => i.key),
      ['name'],
    );
    assert.deepEqual(
      r.contract.outputs.map((o) => o.key),
      ['greeting'],
    );
    assert.ok(
      r.graph.nodes.every(
        (n) => n.type === 'user_input' || n.type === 'user_result' || n.type === 'text',
      ),
    );
    assert.deepEqual(validateInputs(r.contract, { name: 'Ada' }), {
      ok: true,
      values: { name: 'Ada' },
    });
  });

  it('product-copy takes `product_name` and an optional `tone`', () => {
    const r = validateGraph(
      JSON.parse(fs.readFileSync(path.join(dir, 'product-copy.json'), 'utf8')),
    );
    assert.ok(r.ok);
    assert.deepEqual(validateInputs(r.contract, { product_name: 'Lamp' }), {
      ok: true,
      values: { product_name: 'Lamp', tone: 'friendly' },
    });
  });

  it('the JSON examples in docs/workflow-format.md are valid workflows', () => {
    const doc = fs.readFileSync(
      path.join(__dirname, '..', '..', 'docs', 'workflow-format.md'),
      'utf8',
    );
    const blocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]));
    const workflows = blocks.filter((b) => typeof b.slug === 'string');
    assert.ok(workflows.length >= 2);
    for (const w of workflows) assert.ok(validateGraph(w).ok, w.slug);
  });
});
