import assert from 'node:assert/strict';
import { errorMessage, providerFailure, retryAfterMs } from '../../activities/failures';

describe('provider failures (activities/failures.ts)', () => {
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

  it('reads a Retry-After as seconds or an HTTP-date; anything else is none', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    assert.equal(retryAfterMs('12', now), 12_000);
    assert.equal(retryAfterMs(' 0 ', now), 0);
    assert.equal(retryAfterMs('Wed, 01 Jan 2025 00:00:30 GMT', now), 30_000);
    assert.equal(retryAfterMs('Tue, 31 Dec 2024 23:59:00 GMT', now), 0);
    for (const odd of [undefined, '', '-1', '1.5', 'soon', '12, 13', ['1', '2']])
      assert.equal(retryAfterMs(odd, now), undefined, JSON.stringify(odd));
  });

  it("keeps a transient answer's Retry-After in the failure's details, not a refusal's", () => {
    assert.deepEqual(providerFailure('openai', 429, 'slow down', '7').details, [
      { status: 429, retryAfterMs: 7_000 },
    ]);
    assert.deepEqual(providerFailure('openai', 503, 'busy').details, [{ status: 503 }]);
    assert.deepEqual(providerFailure('openai', 400, 'no', '7').details, [{ status: 400 }]);
  });
});
