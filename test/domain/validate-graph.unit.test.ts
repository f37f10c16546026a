import assert from 'node:assert/strict';
import { validateGraph } from '../../domain/validate-graph';
import { type Problem } from '../../domain/problems';

type Doc = { slug: string; nodes: Record<string, unknown>[]; edges: Record<string, unknown>[] };

function hello(): Doc {
  return {
    slug: 'hello',
    nodes: [
      { id: 'name', type: 'user_input', label: 'Name', input_type: 'text' },
      { id: 'greet', type: 'text', template: 'Hello, {{name}}!' },
      { id: 'greeting', type: 'user_result', label: 'Greeting' },
    ],
    edges: [
      { from: 'name', to: 'greet', port: 'name' },
      { from: 'greet', to: 'greeting' },
    ],
  };
}

function problemsOf(doc: unknown): Problem[] {
  const r = validateGraph(doc);
  assert.equal(r.ok, false, 'expected the graph to be rejected');
  return r.ok ? [] : r.problems;
}

/** Asserts that exactly one problem is reported for `field` and that it mentions every fragment. */
function expectProblem(
  problems: Problem[],
  field: string,
  ...fragments: (string | RegExp)[]
): Problem {
  const matching = problems.filter((p) => p.field === field);
  assert.equal(
    matching.length,
    1,
    `expected one problem at ${field}, got ${JSON.stringify(problems, null, 1)}`,
  );
  for (const f of fragments) {
    if (typeof f === 'string')
      assert.ok(matching[0].problem.includes(f), `${field}: "${matching[0].problem}" lacks "${f}"`);
    else assert.match(matching[0].problem, f);
  }
  return matching[0];
}

describe('validateGraph', () => {
  it('accepts a valid graph, applies defaults and derives the contract', () => {
    const r = validateGraph(hello());
    assert.ok(r.ok);
    assert.equal(r.graph.edges[1].port, 'in');
    const input = r.graph.nodes[0];
    assert.ok(input.type === 'user_input' && input.required === true);
    assert.deepEqual(r.contract, {
      inputs: [{ key: 'name', label: 'Name', node_id: 'name', type: 'text', required: true }],
      outputs: [{ key: 'greeting', label: 'Greeting', node_id: 'greeting' }],
    });
  });

  it('does not mutate its argument', () => {
    const doc = hello();
    const copy = JSON.parse(JSON.stringify(doc));
    validateGraph(doc);
    assert.deepEqual(doc, copy);
  });

  it('reports a non-object document once', () => {
    assert.deepEqual(problemsOf(42), [
      { field: 'workflow', problem: 'must be an object, not a number' },
    ]);
    assert.deepEqual(problemsOf(null), [
      { field: 'workflow', problem: 'must be an object, not null' },
    ]);
  });

  it('reports every problem of a broken graph at once, shape problems first', () => {
    const doc = {
      slug: 'Not A Slug',
      colour: 'red',
      nodes: [
        /* 0 */ { id: 'in1', type: 'user_input', label: 'Product Name', input_type: 'text' },
        /* 1 */ {
          id: 'in2',
          type: 'user_input',
          label: 'product-name',
          input_type: 'number',
          default: 'ten',
        },
        /* 2 */ { id: 'blank', type: 'user_input', label: '?!', input_type: 'text' },
        /* 3 */ { id: 't', type: 'text', template: '{{a}} and {{b}}' },
        /* 4 */ { id: 't', type: 'text', template: 'duplicate id' },
        /* 5 */ { id: 'rows', type: 'batch' },
        /* 6 */ { id: 'pick', type: 'select', index: 0 },
        /* 7 */ { id: 'r1', type: 'user_result', label: 'Out' },
        /* 8 */ { id: 'r2', type: 'user_result', label: 'OUT' },
        /* 9 */ { id: 'gpt', type: 'llm', prompt: 'no model', temprature: 2 },
        /* 10 */ { id: 'weird', type: 'teleport' },
        /* 11 */ { id: 'sel', type: 'select', index: 1.5 },
        /* 12 */ { id: 'ready', type: 'join' },
      ],
      edges: [
        /* 0 */ { from: 'in1', to: 't', port: 'a' },
        /* 1 */ { from: 'in1', to: 't', port: 'a' },
        /* 2 */ { from: 'in1', to: 't', port: 'zz' },
        /* 3 */ { from: 'ghost', to: 'in2' },
        /* 4 */ { from: 't', to: 'r1' },
        /* 5 */ { from: 'in1', to: 'r1' },
        /* 6 */ { from: 'r1', to: 'ready' },
        /* 7 */ { from: 'in1', to: 'gpt', port: 'anything' },
        /* 8 */ { from: 'in1', to: 'nowhere' },
        /* 9 */ { from: 'in1' },
      ],
    };
    const problems = problemsOf(doc);
    const expected: [string, ...(string | RegExp)[]][] = [
      // shape
      ['slug', 'lower-case'],
      ['colour', 'is not a field of a workflow'],
      ['nodes[9].model', 'is required'],
      ['nodes[9].temprature', 'is not a field of `llm` nodes'],
      ['nodes[10].type', '`teleport` is not a known type', '`user_input`', '`http_request`'],
      ['nodes[11].index', 'must be an integer'],
      ['edges[9].to', 'is required'],
      // graph
      ['nodes[4].id', 'repeats the id `t`', 'nodes[3]'],
      ['edges[1]', 'port `a`', 'node `t`', 'edges[0]'],
      ['edges[2].port', '`zz`', '`a`, `b`'],
      ['edges[3].from', '`ghost`', 'not a node id'],
      ['edges[3].to', 'user_input', '`in2`'],
      ['edges[6].from', 'user_result', '`r1`'],
      ['edges[8].to', '`nowhere`'],
      ['nodes[1].label', '`in1`', '`in2`', '`product_name`'],
      ['nodes[1].default', 'must be a number'],
      ['nodes[2].label', '`blank`', 'empty'],
      ['nodes[3].template', '`{{b}}`'],
      ['nodes[5].rows', '`rows`'],
      ['nodes[6]', 'select', '`pick`', '`in`'],
      ['nodes[7]', '"Out"', '2 incoming edges'],
      ['nodes[8]', '"OUT"', '0 incoming edges'],
      ['nodes[8].label', '`r1`', '`r2`', '`out`'],
    ];
    for (const [field, ...fragments] of expected) expectProblem(problems, field, ...fragments);
    assert.equal(problems.length, expected.length, JSON.stringify(problems, null, 1));
    // Shape problems precede graph problems.
    const firstGraph = problems.findIndex((p) => p.field === 'nodes[4].id');
    assert.ok(
      problems.slice(0, firstGraph).every((p) => expected.slice(0, 7).some(([f]) => f === p.field)),
    );
    // Edge 7 targets a node with a shape error: neither its port nor its ends are reported.
    assert.ok(!problems.some((p) => p.field.startsWith('edges[7]')));
  });

  it('names both nodes when two user_input labels normalize alike', () => {
    const doc = hello();
    doc.nodes.push({ id: 'other_name', type: 'user_input', label: ' NAME! ', input_type: 'text' });
    doc.nodes.push({ id: 't2', type: 'text', template: '{{x}}' });
    doc.edges.push({ from: 'other_name', to: 't2', port: 'x' });
    const problems = problemsOf(doc);
    expectProblem(
      problems,
      'nodes[3].label',
      '`name`',
      '`other_name`',
      '" NAME! "',
      '"Name"',
      'user_input',
    );
    assert.equal(problems.length, 1);
  });

  it('names both nodes when two user_result labels normalize alike', () => {
    const doc = hello();
    doc.nodes.push({ id: 'again', type: 'user_result', label: 'greeting' });
    doc.edges.push({ from: 'greet', to: 'again' });
    const problems = problemsOf(doc);
    expectProblem(problems, 'nodes[3].label', '`greeting`', '`again`', 'user_result');
    assert.equal(problems.length, 1);
  });

  it('allows a user_input and a user_result to share a label', () => {
    const doc = hello();
    (doc.nodes[2] as { label: string }).label = 'name';
    assert.ok(validateGraph(doc).ok);
  });

  it('names the node whose label normalizes to nothing', () => {
    for (const label of ['', '   ', '***', '🚀🚀']) {
      const doc = hello();
      (doc.nodes[2] as { label: string }).label = label;
      expectProblem(
        problemsOf(doc),
        'nodes[2].label',
        '`greeting`',
        'empty',
        JSON.stringify(label),
      );
    }
  });

  it('reports a cycle and names the nodes on it', () => {
    const doc = hello();
    doc.nodes.push(
      { id: 'a', type: 'text', template: '{{x}}' },
      { id: 'b', type: 'text', template: '{{y}}' },
      { id: 'c', type: 'text', template: '{{z}} {{n}}' },
    );
    doc.edges.push(
      { from: 'a', to: 'b', port: 'y' },
      { from: 'b', to: 'c', port: 'z' },
      { from: 'c', to: 'a', port: 'x' },
      { from: 'name', to: 'c', port: 'n' },
    );
    const problems = problemsOf(doc);
    expectProblem(problems, 'edges[4]', 'cycle', '`a` → `b` → `c` → `a`');
    assert.equal(problems.length, 1);
  });

  it('reports a self-loop', () => {
    const doc = hello();
    doc.nodes.push({ id: 'loop', type: 'text', template: '{{again}}' });
    doc.edges.push({ from: 'loop', to: 'loop', port: 'again' });
    expectProblem(problemsOf(doc), 'edges[2]', '`loop` → `loop`');
  });

  it('reports two separate cycles separately', () => {
    const doc = hello();
    doc.nodes.push(
      { id: 'a', type: 'text', template: '{{x}}' },
      { id: 'b', type: 'text', template: '{{x}}' },
      { id: 'c', type: 'text', template: '{{x}}' },
      { id: 'd', type: 'text', template: '{{x}}' },
    );
    doc.edges.push(
      { from: 'a', to: 'b', port: 'x' },
      { from: 'b', to: 'a', port: 'x' },
      { from: 'c', to: 'd', port: 'x' },
      { from: 'd', to: 'c', port: 'x' },
    );
    const problems = problemsOf(doc);
    assert.equal(problems.length, 2);
    assert.ok(problems.every((p) => p.problem.includes('cycle')));
  });

  it('requires a user_result', () => {
    const doc = hello();
    doc.nodes.pop();
    doc.edges.pop();
    expectProblem(problemsOf(doc), 'nodes', 'user_result');
  });

  it('accepts a batch with rows of its own and no rows edge', () => {
    const r = validateGraph({
      slug: 'rows',
      nodes: [
        { id: 'b', type: 'batch', rows: ['a', { b: 1 }] },
        { id: 'out', type: 'user_result', label: 'Rows' },
      ],
      edges: [{ from: 'b', to: 'out' }],
    });
    assert.ok(r.ok, JSON.stringify(r));
    assert.deepEqual(r.contract.inputs, []);
  });

  it('requires exactly one of model and version on a model node', () => {
    const base = { id: 'm', type: 'model', input: { prompt: 'x' } };
    const doc = (node: object) => ({
      slug: 'm',
      nodes: [node, { id: 'out', type: 'user_result', label: 'Out' }],
      edges: [{ from: 'm', to: 'out' }],
    });
    expectProblem(problemsOf(doc(base)), 'nodes[0].model', 'is required');
    expectProblem(
      problemsOf(doc({ ...base, model: 'a/b', version: 'v' })),
      'nodes[0].version',
      'together',
    );
    assert.ok(validateGraph(doc({ ...base, version: 'abc' })).ok);
  });

  it('reports an unfed placeholder of every templated node type', () => {
    const nodes = [
      { id: 'l', type: 'llm', model: 'm', system: 'be {{tone}}', prompt: 'hi' },
      { id: 'g', type: 'image_generation', model: 'm', prompt: '{{thing}}' },
      { id: 'h', type: 'http_request', url: 'https://x', headers: { A: '{{token}}' } },
      { id: 'mo', type: 'model', model: 'a/b', input: { p: ['{{deep}}'] } },
    ];
    const problems = problemsOf({
      slug: 'unfed',
      nodes: [
        ...nodes,
        { id: 'out', type: 'user_result', label: 'Out' },
        { id: 'j', type: 'join' },
      ],
      edges: [
        { from: 'l', to: 'j' },
        { from: 'j', to: 'out' },
      ],
    });
    expectProblem(problems, 'nodes[0].system', '`{{tone}}`');
    expectProblem(problems, 'nodes[1].prompt', '`{{thing}}`');
    expectProblem(problems, 'nodes[2].headers', '`{{token}}`');
    expectProblem(problems, 'nodes[3].input', '`{{deep}}`');
    assert.equal(problems.length, 4);
  });

  it('finds the placeholders of a model input of 300,000 strings (before: the stack overflowed, a 500)', () => {
    const problems = problemsOf({
      slug: 'wide-input',
      nodes: [
        {
          id: 'mo',
          type: 'model',
          model: 'a/b',
          input: { a: [...Array(300_000).fill(''), '{{x}}'] },
        },
        { id: 'out', type: 'user_result', label: 'Out' },
      ],
      edges: [{ from: 'mo', to: 'out' }],
    });
    expectProblem(problems, 'nodes[0].input', '`{{x}}`');
  });

  it('reports a port on a node without ports and out-of-range values', () => {
    const problems = problemsOf({
      slug: 'x',
      nodes: [
        { id: 't', type: 'text', template: 'static' },
        { id: 'g', type: 'image_generation', model: 'm', prompt: 'p', n: 11 },
        { id: 'h', type: 'http_request', method: 'FETCH', url: '', timeout_ms: 0 },
        { id: 'out', type: 'user_result', label: 'Out' },
      ],
      edges: [
        { from: 't', to: 'out' },
        { from: 'out', to: 't' },
      ],
    });
    expectProblem(problems, 'nodes[1].n', '≤ 10');
    expectProblem(problems, 'nodes[2].method', '`GET`');
    expectProblem(problems, 'nodes[2].url', 'must not be empty');
    expectProblem(problems, 'nodes[2].timeout_ms', '≥ 1');
    expectProblem(problems, 'edges[1].port', 'has no input ports');
    expectProblem(problems, 'edges[1].from', 'user_result');
  });

  it('refuses `__proto__` as a node id or a placeholder, which a value map cannot hold', () => {
    const byId = hello();
    byId.nodes[1].id = '__proto__';
    byId.edges = [
      { from: 'name', to: '__proto__', port: 'name' },
      { from: '__proto__', to: 'greeting' },
    ];
    expectProblem(problemsOf(byId), 'nodes[1].id', '`__proto__`', 'reserved');
    const byPlaceholder = hello();
    byPlaceholder.nodes[1].template = 'Hello, {{__proto__}}!';
    byPlaceholder.edges[0].port = '__proto__';
    const problems = problemsOf(byPlaceholder);
    expectProblem(problems, 'nodes[1].template', '{{__proto__}}', 'reserved');
    assert.equal(problems.length, 1, JSON.stringify(problems));
    // Other names of Object.prototype are ordinary names.
    const ordinary = hello();
    ordinary.nodes[1].id = 'constructor';
    ordinary.nodes[1].template = '{{toString}} {{constructor}}';
    ordinary.nodes.push({ id: 'n2', type: 'user_input', label: 'Constructor', input_type: 'text' });
    ordinary.edges = [
      { from: 'name', to: 'constructor', port: 'toString' },
      { from: 'n2', to: 'constructor', port: 'constructor' },
      { from: 'constructor', to: 'greeting' },
    ];
    assert.ok(validateGraph(ordinary).ok, JSON.stringify(validateGraph(ordinary)));
  });

  it('refuses control, bidi and invisible characters in labels and names', () => {
    for (const [text, character] of [
      ['Na\u0000me', 'U+0000'],
      ['Name\u202Etxt.exe', 'U+202E'],
      ['Na\u200Bme', 'U+200B'],
      ['Line\nbreak', 'U+000A'],
    ]) {
      const doc = hello();
      doc.nodes[0].label = text;
      expectProblem(problemsOf(doc), 'nodes[0].label', character);
      const named = hello();
      named.nodes[1].name = text;
      (named as Record<string, unknown>).name = text;
      const problems = problemsOf(named);
      expectProblem(problems, 'nodes[1].name', character);
      expectProblem(problems, 'name', character);
    }
    const emoji = hello();
    emoji.nodes[0].label = 'Family 👨‍👩‍👧'; // zero-width joiners inside an emoji stay allowed
    assert.ok(validateGraph(emoji).ok);
  });

  it('refuses a label mixing Latin, Greek or Cyrillic letters in one word, and labels that look alike', () => {
    const mixed = hello();
    mixed.nodes[0].label = 'Nаme'; // Cyrillic а
    expectProblem(problemsOf(mixed), 'nodes[0].label', 'Latin and Cyrillic');
    const twins = hello();
    twins.nodes.push({ id: 'cyr', type: 'user_input', label: 'а', input_type: 'text' }); // Cyrillic
    twins.nodes.push({ id: 'lat', type: 'user_input', label: 'a', input_type: 'text' }); // Latin
    twins.nodes.push({ id: 't2', type: 'text', template: '{{x}}{{y}}' });
    twins.edges.push({ from: 'cyr', to: 't2', port: 'x' }, { from: 'lat', to: 't2', port: 'y' });
    expectProblem(problemsOf(twins), 'nodes[4].label', 'looks like', '`cyr`', 'Cyrillic');
    // One script per word is fine, in any script.
    const scripts = hello();
    scripts.nodes[0].label = 'Имя name 名前 όνομα';
    assert.ok(validateGraph(scripts).ok);
  });

  it('enforces size limits', () => {
    const doc = hello();
    (doc as { slug: string }).slug = 'x'.repeat(65);
    expectProblem(problemsOf(doc), 'slug', '64');
    expectProblem(problemsOf({ ...hello(), nodes: [] }), 'nodes', 'at least one');
    const many = hello();
    many.edges = Array.from({ length: 2001 }, () => ({ from: 'greet', to: 'greeting' }));
    expectProblem(problemsOf(many), 'edges', '2000');
  });

  it('refuses a chain of nodes far past the limit by its size alone (the cycle search is recursive)', () => {
    const n = 20_000;
    const nodes: unknown[] = [{ id: 'in', type: 'user_input', name: 'x', input_type: 'text' }];
    const edges: unknown[] = [];
    for (let i = 0; i < n; i++) {
      nodes.push({ id: `t${i}`, type: 'text', template: '{{x}}' });
      edges.push({ from: i === 0 ? 'in' : `t${i - 1}`, to: `t${i}`, port: 'x' });
    }
    const problems = problemsOf({ slug: 'chain', nodes, edges });
    assert.deepEqual(
      problems.map((p) => p.field),
      ['nodes', 'edges'],
    );
    expectProblem(problems, 'nodes', '500');
  });
  it('bounds the placeholders of a template (each is filled again for every row)', () => {
    const doc = (n: number) => ({
      slug: 'many',
      nodes: [
        { id: 'b', type: 'batch', rows: ['a'] },
        { id: 't', type: 'text', template: '{{r}}'.repeat(n) },
        { id: 'o', type: 'user_result', label: 'O' },
      ],
      edges: [
        { from: 'b', to: 't', port: 'r' },
        { from: 't', to: 'o' },
      ],
    });
    assert.ok(validateGraph(doc(1_000)).ok);
    assert.deepEqual(problemsOf(doc(1_001)), [
      {
        field: 'nodes[1].template',
        problem: 'holds 1001 placeholders; a template may hold at most 1000',
      },
    ]);
  });
});
