// Free-form JSON the store cannot hold is refused with a 400 naming where it is (found by
// schemathesis: a `$`-prefixed, dotted or NUL key, or an array inside an array, in a
// workflow's `meta` or a json input was a 500 at insert).
import assert from 'node:assert/strict';
import { inputValueProblem } from '../../domain/input-values';
import { unstorableJsonProblems, unstorableKeyReason } from '../../domain/storable-json';
import { validateGraph } from '../../domain/validate-graph';
import { greetingWorkflow } from '../support/fixtures';

const NESTED =
  'is an array directly inside an array, which the store cannot hold (wrap it in an object)';

describe('storable JSON', () => {
  it('names keys that start with `$`, contain `.` or a NUL; anything else is fine, the empty key included', () => {
    assert.equal(unstorableKeyReason('$ref'), 'starts with `$`');
    assert.equal(unstorableKeyReason('a.b'), 'contains `.`');
    assert.equal(unstorableKeyReason('a\u0000'), 'contains a NUL character');
    for (const key of ['', 'a$', 'ü', 'x-y', ' '])
      assert.equal(unstorableKeyReason(key), undefined, JSON.stringify(key));
  });

  it('walks nested objects and arrays, reporting each bad key and each array inside an array at its path', () => {
    const value = {
      ok: { fine: [1, { $x: 1 }] },
      'a.b': { $deeper: 1 },
      list: [{ 'c\u0000': 2 }],
      matrix: [1, [2], { rows: [[3]] }],
    };
    assert.deepEqual(unstorableJsonProblems(value, ['meta']), [
      { field: 'meta["a.b"]', problem: 'is a key the store cannot hold: it contains `.`' },
      {
        field: 'meta.ok.fine[1].$x',
        problem: 'is a key the store cannot hold: it starts with `$`',
      },
      {
        field: 'meta.list[0]["c\\u0000"]',
        problem: 'is a key the store cannot hold: it contains a NUL character',
      },
      { field: 'meta.matrix[1]', problem: NESTED },
      { field: 'meta.matrix[2].rows[0]', problem: NESTED },
    ]);
    assert.deepEqual(
      unstorableJsonProblems({ tags: ['a', 'b'], rows: [{ a: 1 }], n: null, s: '$.x' }),
      [],
    );
  });

  it('stops at `limit` problems and walks deep values without overflowing the stack', () => {
    assert.equal(
      unstorableJsonProblems(
        Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`$${i}`, i])),
        [],
        5,
      ).length,
      5,
    );
    let deep: unknown = { $bottom: 1 };
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    assert.equal(unstorableJsonProblems(deep).length, 1);
  });

  it('a workflow holding such JSON anywhere (builder meta, a node, batch rows) is unpublishable, each place listed', () => {
    const doc = greetingWorkflow('keys', 'Hi', { meta: { 'canvas.zoom': 1 } }) as any;
    doc.nodes[1].meta = { $pos: [[1, 2]] };
    const result = validateGraph(doc);
    assert.equal(result.ok, false);
    assert.deepEqual(!result.ok && result.problems.map((p) => p.field), [
      'meta["canvas.zoom"]',
      'nodes[1].meta.$pos',
    ]);
    assert.equal(
      validateGraph(
        greetingWorkflow('keys', 'Hi', { meta: { canvas: { zoom: 1 }, pos: [{ xy: [1, 2] }] } }),
      ).ok,
      true,
    );
  });

  it('a json input value holding such JSON is refused, naming where', () => {
    assert.equal(
      inputValueProblem('json', { user: { 'e.mail': 'a@b' } }),
      'contains `user["e.mail"]`, which is a key the store cannot hold: it contains `.`',
    );
    assert.equal(inputValueProblem('json', [[1, 2]]), `contains \`[0]\`, which ${NESTED}`);
    assert.equal(
      inputValueProblem('json', { user: { email: 'a@b' }, rows: [{ xy: [1, 2] }] }),
      undefined,
    );
  });
});
