import assert from 'node:assert/strict';
import { errorMessage } from '../../activities/failures';

describe('errorMessage (activities/failures.ts)', () => {
  it("keeps a provider's message, wherever its error body puts it", () => {
    assert.equal(errorMessage('{"error":{"message":"model not found"}}'), 'model not found');
    assert.equal(errorMessage('{"error":"bad key"}'), 'bad key');
    assert.equal(errorMessage('{"message":"slow down"}'), 'slow down');
    assert.equal(errorMessage('Bad Gateway'), 'Bad Gateway');
    assert.equal(errorMessage('null'), 'null');
    assert.equal(errorMessage(''), 'no message');
  });

  it('keeps 500 characters of it, however much the provider sent and wherever', () => {
    const long = 'x'.repeat(1_000_000);
    for (const body of [
      JSON.stringify({ error: { message: long } }),
      JSON.stringify({ error: long }),
      JSON.stringify({ message: long }),
      long,
    ])
      assert.equal(errorMessage(body), 'x'.repeat(500));
  });

  it('reads an error body of more values than a JSON answer may hold as text, without parsing it', () => {
    const wide = `[${Array(300_000).fill('{}').join(',')}]`;
    assert.equal(errorMessage(wide), wide.slice(0, 500));
  });
});
