// D19: ALLOW_PRIVATE_NETWORK (the SSRF guard off, tests only) is refused at config load in
// production; WEBHOOK_ALLOW_PRIVATE_NETWORK stays allowed (an internal webhook receiver is real).
import assert from 'node:assert/strict';
import { loadConfig } from '../../config';

/** What production requires besides (config/index.ts): the link secret and a payload key. */
const PRODUCTION = {
  NODE_ENV: 'production',
  FILE_URL_SECRET: 's'.repeat(40),
  PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
};

describe('config: ALLOW_PRIVATE_NETWORK in production', () => {
  for (const value of ['true', '1']) {
    it(`refuses ALLOW_PRIVATE_NETWORK=${value} when NODE_ENV=production, naming the variable`, () => {
      assert.throws(
        () => loadConfig({ ...PRODUCTION, ALLOW_PRIVATE_NETWORK: value }),
        /ALLOW_PRIVATE_NETWORK cannot be true when NODE_ENV=production: it turns the SSRF guard off/,
      );
    });
  }

  it('accepts it off in production, and on outside production (tests, development)', () => {
    assert.equal(
      loadConfig({ ...PRODUCTION, ALLOW_PRIVATE_NETWORK: 'false' }).files.allowPrivateNetwork,
      false,
    );
    assert.equal(loadConfig({ ALLOW_PRIVATE_NETWORK: 'true' }).files.allowPrivateNetwork, true);
  });

  it('keeps WEBHOOK_ALLOW_PRIVATE_NETWORK and ALLOW_PRIVATE_HOSTS allowed in production', () => {
    const config = loadConfig({
      ...PRODUCTION,
      WEBHOOK_ALLOW_PRIVATE_NETWORK: 'true',
      ALLOW_PRIVATE_HOSTS: 'assets.internal',
    });
    assert.equal(config.webhooks.allowPrivateNetwork, true);
    assert.deepEqual(config.files.allowPrivateHosts, ['assets.internal']);
  });
});
