/** How deep parsed JSON may nest (domain/json-depth.ts): checked without recursion, so a hostile value cannot overflow the stack. */
import assert from 'node:assert/strict';
import {
  depthExceeds,
  JsonTooDeep,
  parseJsonWithin,
  PARSED_JSON_MAX_DEPTH,
} from '../../domain/json-depth';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('JSON depth (domain/json-depth.ts)', () => {
  it('counts objects and arrays, not scalars: a scalar is depth 0, `[]` and `{}` depth 1', () => {
    assert.equal(depthExceeds('text', 0), false);
    assert.equal(depthExceeds([], 0), true);
    assert.equal(depthExceeds({ a: { b: [1] } }, 3), false);
    assert.equal(depthExceeds({ a: { b: [1] } }, 2), true);
  });

  it('parses a value up to PARSED_JSON_MAX_DEPTH and refuses one deeper, also 1,000,000 deep', () => {
    assert.deepEqual(parseJsonWithin('{"a": [1, 2]}'), { a: [1, 2] });
    assert.doesNotThrow(() => parseJsonWithin(nested(PARSED_JSON_MAX_DEPTH)));
    for (const depth of [PARSED_JSON_MAX_DEPTH + 1, 1_000_000])
      assert.throws(
        () => parseJsonWithin(nested(depth)),
        (err: Error) => err instanceof JsonTooDeep && err.message === 'nests deeper than 64 levels',
      );
    assert.throws(() => parseJsonWithin('{x}'), SyntaxError);
  });
});
