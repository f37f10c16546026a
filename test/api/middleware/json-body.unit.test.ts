/**
 * The Content-Type of a JSON body (api/middleware/json-body.ts): exactly `application/json`, with
 * parameters as RFC 9110 §5.6.6 writes them, and nothing else (no `+json` type).
 */
import assert from 'node:assert/strict';
import { jsonMediaTypeParameters } from '../../../api/middleware/json-body';

describe('jsonMediaTypeParameters', () => {
  it('takes application/json and its parameters, names lower-cased and quoted values unquoted', () => {
    assert.deepEqual(jsonMediaTypeParameters('application/json'), []);
    assert.deepEqual(jsonMediaTypeParameters('  APPLICATION/Json  '), []);
    assert.deepEqual(jsonMediaTypeParameters('application/json; Charset=UTF-8'), [
      ['charset', 'UTF-8'],
    ]);
    assert.deepEqual(jsonMediaTypeParameters('application/json ;charset="utf8" ; v=1'), [
      ['charset', 'utf8'],
      ['v', '1'],
    ]);
    assert.deepEqual(jsonMediaTypeParameters('application/json;;'), []);
    assert.deepEqual(jsonMediaTypeParameters('application/json; p="a \\"b\\"; c"'), [
      ['p', 'a "b"; c'],
    ]);
  });

  it('refuses any other type, a +json one, and malformed parameters', () => {
    for (const type of [
      '',
      'application/jsonx',
      'application/merge-patch+json',
      'application/problem+json; charset=utf-8',
      'text/json',
      'application/json x',
      'application/json; charset',
      'application/json; charset=',
      'application/json; =utf-8',
      'application/json; charset="utf-8',
      'application/json; charset=utf 8',
    ])
      assert.equal(jsonMediaTypeParameters(type), undefined, type);
  });
});
