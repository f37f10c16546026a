/** domain/batch-rows.ts: the rows a `batch` takes from each item of its `rows` port (NODES.md). */
import assert from 'node:assert/strict';
import { BatchRowsProblem, BatchRowsTooDeep, rowsOfItem } from '../../domain/batch-rows';
import { completed, failed } from '../../domain/items';

describe('batch rows (domain/batch-rows.ts)', () => {
  it("takes a json part's array, a text part's JSON array or its non-empty lines, a file part's link", () => {
    assert.deepEqual(rowsOfItem(completed({ type: 'json', data: [1, { a: 2 }, 'x'] })), [
      1,
      { a: 2 },
      'x',
    ]);
    assert.deepEqual(rowsOfItem(completed({ type: 'text', text: ' ["a", 2] ' })), ['a', 2]);
    assert.deepEqual(rowsOfItem(completed({ type: 'text', text: 'one\r\n\n  \ntwo\n' })), [
      'one',
      'two',
    ]);
    assert.deepEqual(rowsOfItem(completed({ type: 'text', text: '[not json\nsecond' })), [
      '[not json',
      'second',
    ]);
    assert.deepEqual(
      rowsOfItem(
        completed({ type: 'file', url: 'https://files.example/f' }, { type: 'text', text: 'a\nb' }),
      ),
      ['https://files.example/f', 'a', 'b'],
      "an item's parts in order",
    );
  });

  it('takes a list longer than a call may spread (300,000 rows of one item)', () => {
    const data = Array.from({ length: 300_000 }, (_, i) => i);
    assert.equal(rowsOfItem(completed({ type: 'json', data })).length, 300_000);
    const text = data.join('\n');
    assert.equal(rowsOfItem(completed({ type: 'text', text })).length, 300_000);
  });

  it('takes the lines a split and a filter give, and stops one past a limit', () => {
    const texts = ['a\r\nb\rc\n\r\n \nd\r', '\n\nx', 'x\r', '\r\n', '', 'one\ntwo\nthree\n'];
    for (const text of texts) {
      const split = text.split(/\r?\n/).filter((line) => line.trim() !== '');
      const item = completed({ type: 'text', text });
      assert.deepEqual(rowsOfItem(item, undefined, 100), split, JSON.stringify(text));
      assert.deepEqual(rowsOfItem(item, undefined, 1), split.slice(0, 2), JSON.stringify(text));
    }
  });

  it('names why an item gives no rows: a failed item, JSON that is not an array', () => {
    assert.throws(
      () => rowsOfItem(failed({ message: 'provider said no', type: 'provider_error' })),
      (err: unknown) =>
        err instanceof BatchRowsProblem && err.message === 'rows input failed: provider said no',
    );
    assert.throws(
      () => rowsOfItem(completed({ type: 'json', data: { rows: [1] } })),
      (err: unknown) =>
        err instanceof BatchRowsProblem && err.message === 'rows input is JSON but not an array',
    );
  });

  it("refuses a text's JSON array nested deeper than 64 levels (5,002 levels: the run could not end)", () => {
    const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    assert.equal(rowsOfItem(completed({ type: 'text', text: nested(64) })).length, 1);
    for (const depth of [65, 5_002])
      assert.throws(
        () => rowsOfItem(completed({ type: 'text', text: nested(depth) })),
        (err: unknown) =>
          err instanceof BatchRowsTooDeep &&
          err.message === 'rows input is JSON nested deeper than 64 levels',
      );
    assert.equal(rowsOfItem(completed({ type: 'text', text: nested(65) }), Infinity).length, 1);
  });
});
