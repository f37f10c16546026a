/** How deep parsed JSON may nest and how many values it may hold (domain/json-depth.ts): checked without recursion, and before parsing. */
import assert from 'node:assert/strict';
import {
  depthExceeds,
  jsonValuesExceed,
  JsonTooDeep,
  JsonTooWide,
  parseJsonWithin,
  PARSED_JSON_MAX_DEPTH,
  PARSED_JSON_MAX_VALUES,
} from '../../domain/json-depth';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('JSON depth (domain/json-depth.ts)', () => {
  it('counts objects and arrays, not scalars: a scalar is depth 0, `[]` and `{}` depth 1', () => {
    assert.equal(depthExceeds('text', 0), false);
    assert.equal(depthExceeds([], 0), true);
    assert.equal(depthExceeds({ a: { b: [1] } }, 3), false);
    assert.equal(depthExceeds({ a: { b: [1] } }, 2), true);
  });

  it('parses a value up to PARSED_JSON_MAX_DEPTH and refuses one deeper, also 200,000 deep', () => {
    assert.deepEqual(parseJsonWithin('{"a": [1, 2]}'), { a: [1, 2] });
    assert.doesNotThrow(() => parseJsonWithin(nested(PARSED_JSON_MAX_DEPTH)));
    for (const depth of [PARSED_JSON_MAX_DEPTH + 1, 200_000])
      assert.throws(
        () => parseJsonWithin(nested(depth)),
        (err: Error) => err instanceof JsonTooDeep && err.message === 'nests deeper than 64 levels',
      );
    assert.throws(() => parseJsonWithin('{x}'), SyntaxError);
  });

  it('counts values before parsing: brackets and commas outside strings', () => {
    assert.equal(jsonValuesExceed('[1,2,3]', 3), true); // the list and its three numbers
    assert.equal(jsonValuesExceed('[1,2,3]', 4), false);
    const list = (n: number) => `[${Array(n).fill('{}').join(',')}]`;
    assert.equal(jsonValuesExceed(list(1000), 1001), false); // the list and its 1,000 objects
    assert.equal(jsonValuesExceed(list(1000), 1000), true);
    const text = JSON.stringify({ a: ',,,,[{'.repeat(1000), b: '\\"' + ','.repeat(1000) });
    assert.equal(jsonValuesExceed(text, 10), false, 'commas and brackets in strings are text');
    const escapedSlash = JSON.stringify(['\\', ...Array(10).fill(0)]); // ["\\",0,…]: the string ends
    assert.equal(jsonValuesExceed(escapedSlash, 11), true);
    assert.equal(jsonValuesExceed(escapedSlash, 12), false);
  });

  it('refuses a text of more than PARSED_JSON_MAX_VALUES values before parsing it, however short each', () => {
    const wide = `[${Array(PARSED_JSON_MAX_VALUES).fill('{}').join(',')}]`;
    assert.throws(
      () => parseJsonWithin(wide),
      (err: Error) => err instanceof JsonTooWide && err.message === 'holds more than 250000 values',
    );
    const fits = `[${Array(PARSED_JSON_MAX_VALUES - 1)
      .fill('0')
      .join(',')}]`;
    assert.equal((parseJsonWithin(fits) as unknown[]).length, PARSED_JSON_MAX_VALUES - 1);
    // A long string is one value: an image's 16 MB of base64 is parsed as before.
    const image = JSON.stringify({ data: [{ b64_json: 'A'.repeat(16_000_000) }] });
    assert.equal((parseJsonWithin(image) as any).data[0].b64_json.length, 16_000_000);
  });
});
