import assert from 'node:assert/strict';
import type { Contract, ContractInput } from '../../domain/contract';
import { validateInputs } from '../../domain/inputs';
import { describeProblems } from '../../domain/problems';

const input = (
  key: string,
  type: ContractInput['type'],
  extra: Partial<ContractInput> = {},
): ContractInput => ({
  key,
  label: key,
  node_id: `n_${key}`,
  type,
  required: true,
  ...extra,
});

const contract: Contract = {
  inputs: [
    input('product_name', 'text'),
    input('count', 'number', { required: false, default: 1 }),
    input('dry_run', 'boolean', { required: false }),
    input('options', 'json', { required: false }),
    input('photo', 'image', { required: false }),
    input('clip', 'video', { required: false }),
    input('sheet', 'file', { required: false }),
  ],
  outputs: [],
};

const FILE_ID = 'file_01HZX3Y8Q2V4N6R8T0W2Y4A6C8';

function problems(inputs: unknown, c: Contract = contract) {
  const r = validateInputs(c, inputs);
  assert.equal(r.ok, false, 'expected the inputs to be rejected');
  return r.ok ? [] : r.problems;
}

describe('validateInputs (D4)', () => {
  it('accepts valid inputs and applies defaults', () => {
    const r = validateInputs(contract, {
      product_name: 'Lamp',
      dry_run: false,
      options: { a: [1, null, 'x'] },
      photo: FILE_ID,
      clip: 'https://cdn.example.com/v.mp4?x=1',
      sheet: 'http://localhost:8080/spec.pdf',
    });
    assert.deepEqual(r, {
      ok: true,
      values: {
        product_name: 'Lamp',
        count: 1,
        dry_run: false,
        options: { a: [1, null, 'x'] },
        photo: FILE_ID,
        clip: 'https://cdn.example.com/v.mp4?x=1',
        sheet: 'http://localhost:8080/spec.pdf',
      },
    });
  });

  it('leaves optional inputs without a default out', () => {
    assert.deepEqual(validateInputs(contract, { product_name: '' }), {
      ok: true,
      values: { product_name: '', count: 1 },
    });
  });

  it('treats absent inputs as {}', () => {
    const optional: Contract = {
      inputs: [input('tone', 'text', { required: false, default: 'warm' })],
      outputs: [],
    };
    assert.deepEqual(validateInputs(optional, undefined), { ok: true, values: { tone: 'warm' } });
    assert.deepEqual(validateInputs({ inputs: [], outputs: [] }, undefined), {
      ok: true,
      values: {},
    });
    assert.deepEqual(problems(undefined), [{ field: 'product_name', problem: 'is required' }]);
  });

  it('lets a required input with a default be omitted', () => {
    const c: Contract = { inputs: [input('n', 'number', { default: 5 })], outputs: [] };
    assert.deepEqual(validateInputs(c, {}), { ok: true, values: { n: 5 } });
  });

  it('rejects inputs that are not a plain object', () => {
    for (const bad of [null, 'x', 3, true, ['a'], new Date()]) {
      assert.deepEqual(problems(bad), [{ field: 'inputs', problem: 'must be an object' }]);
    }
  });

  it('reports a missing required input', () => {
    assert.deepEqual(problems({}), [{ field: 'product_name', problem: 'is required' }]);
  });

  it('reports an unknown key and lists the inputs', () => {
    const p = problems({ product_name: 'x', colour: 'red' });
    assert.equal(p.length, 1);
    assert.equal(p[0].field, 'colour');
    assert.match(p[0].problem, /is not an input of this workflow/);
    assert.match(p[0].problem, /`product_name`, `count`/);
  });

  it('says "did you mean" for a key that normalizes to a known one', () => {
    assert.deepEqual(problems({ 'Product Name': 'x' }), [
      { field: 'product_name', problem: 'is required' },
      {
        field: 'Product Name',
        problem: 'is not an input of this workflow (did you mean `product_name`?)',
      },
    ]);
    const p = problems({ product_name: 'x', 'DRY-RUN': true });
    assert.deepEqual(p, [
      { field: 'DRY-RUN', problem: 'is not an input of this workflow (did you mean `dry_run`?)' },
    ]);
  });

  it('says so when the workflow takes no inputs', () => {
    assert.deepEqual(problems({ a: 1 }, { inputs: [], outputs: [] }), [
      { field: 'a', problem: 'is not an input of this workflow (it takes no inputs)' },
    ]);
  });

  const wrongTypes: [string, unknown, string][] = [
    ['product_name', 5, 'must be a string'],
    ['product_name', null, 'must be a string'],
    ['count', '5', 'must be a number'],
    ['count', Number.NaN, 'must be a finite number'],
    ['count', Number.POSITIVE_INFINITY, 'must be a finite number'], // JSON.parse('1e999')
    ['dry_run', 'true', 'must be a boolean'],
    ['dry_run', 0, 'must be a boolean'],
    ['options', () => 1, 'must be a JSON value'],
    ['options', { n: Number.NaN }, 'must be a JSON value'],
    ['options', { d: new Date() }, 'must be a JSON value'],
    ['options', [undefined], 'must be a JSON value'],
    ['photo', 'file_123', 'must be a `file_...` id or an http(s) URL'],
    ['photo', 'ftp://example.com/a.png', 'must be a `file_...` id or an http(s) URL'],
    ['clip', '/relative/path.mp4', 'must be a `file_...` id or an http(s) URL'],
    ['clip', 42, 'must be a `file_...` id or an http(s) URL'],
    ['sheet', 'https://', 'must be a `file_...` id or an http(s) URL'],
    ['sheet', 'https://example.com/has space', 'must be a `file_...` id or an http(s) URL'],
  ];
  for (const [key, value, problem] of wrongTypes) {
    it(`rejects ${key} = ${String(typeof value === 'function' ? 'a function' : JSON.stringify(value))}`, () => {
      assert.deepEqual(problems({ product_name: 'x', [key]: value }), [{ field: key, problem }]);
    });
  }

  it('accepts any JSON value the store can hold for a json input (test/domain/storable-json.unit.test.ts: what it cannot)', () => {
    for (const value of [null, 0, 'text', false, [], {}, [{ a: [{ b: null }] }]]) {
      const r = validateInputs(contract, { product_name: 'x', options: value });
      assert.ok(r.ok && r.values.options === value);
    }
    // Objects, not arrays, all the way down: an array directly inside an array cannot be stored (FerretDB).
    const deep: Record<string, unknown> = {};
    let cur = deep;
    for (let i = 0; i < 100_000; i++) {
      const next: Record<string, unknown> = {};
      cur.a = [next];
      cur = next;
    }
    assert.ok(validateInputs(contract, { product_name: 'x', options: deep }).ok);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    assert.equal(validateInputs(contract, { product_name: 'x', options: cyclic }).ok, false);
  });

  it('reports every problem in contract order, unknown keys last', () => {
    const p = problems({ zeta: 1, count: 'many', photo: 'nope', 'Product  Name': 'x' });
    assert.deepEqual(
      p.map((x) => x.field),
      ['product_name', 'count', 'photo', 'zeta', 'Product  Name'],
    );
    assert.equal(
      describeProblems(p),
      'Invalid inputs: `product_name` is required; `count` must be a number; ' +
        '`photo` must be a `file_...` id or an http(s) URL; ' +
        '`zeta` is not an input of this workflow (its inputs are `product_name`, `count`, `dry_run`, `options`, `photo`, `clip`, `sheet`); ' +
        '`Product  Name` is not an input of this workflow (did you mean `product_name`?)',
    );
  });

  it('does not read inherited properties as inputs', () => {
    const c: Contract = { inputs: [input('constructor', 'text')], outputs: [] };
    assert.deepEqual(problems({}, c), [{ field: 'constructor', problem: 'is required' }]);
  });
  it('keeps the answer about unknown keys small, however many inputs and keys there are', () => {
    const longKey = (i: number) => `${'k'.repeat(3_000)}${i}`;
    const many: Contract = {
      inputs: Array.from({ length: 499 }, (_, i) => input(longKey(i), 'text', { required: false })),
      outputs: [],
    };
    const sent = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`x${i}`, '']));
    const p = problems(sent, many);
    assert.equal(p.length, 21); // 20 named, then how many more
    assert.match(
      p[0].problem,
      /^is not an input of this workflow \(its inputs are `k{64}…`, .* and 489 more\)$/,
    );
    assert.deepEqual(p[20], {
      field: 'x20',
      problem: 'and 4979 more keys are not inputs of this workflow either',
    });
    const message = describeProblems(p);
    assert.ok(message.length < 10_000, `${message.length} characters`);
    assert.match(message, /; and 11 more \(see `details`\)$/);
    assert.equal(problems({ [longKey(0).repeat(10)]: 1 }, many)[0].field, `${'k'.repeat(64)}…`);
  });
});
