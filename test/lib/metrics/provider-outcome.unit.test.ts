/**
 * The outcome of a provider call (lib/metrics, `wrs_provider_requests_total`): a provider refusing
 * the request it was sent (a tenant's prompt) is `rejected`, not an error of the provider, so one
 * tenant's refused requests cannot fire WrsProviderErrorRateHigh; throttling and a refused key still count.
 */
import assert from 'node:assert/strict';
import { providerOutcome } from '../../../lib/metrics';

describe('providerOutcome', () => {
  it('tells a refused request from a failing or throttling provider (before: every non-2xx an http_error)', () => {
    const seen = [200, 204, 400, 401, 403, 404, 408, 422, 429, 500, 503].map((s) => [
      s,
      providerOutcome(s),
    ]);
    assert.deepEqual(seen, [
      [200, 'ok'],
      [204, 'ok'],
      [400, 'rejected'],
      [401, 'http_error'],
      [403, 'http_error'],
      [404, 'rejected'],
      [408, 'http_error'],
      [422, 'rejected'],
      [429, 'http_error'],
      [500, 'http_error'],
      [503, 'http_error'],
    ]);
  });
});
