// Settings that have no effect are said at start (Config.warnings, logged by the API and every worker):
// an OPENAI_API_KEY without OPENAI_BASE_URL was dropped silently, so every llm run of such an install was
// refused or failed for want of a provider, and nothing said why.
import assert from 'node:assert/strict';
import { loadConfig } from '../../config';

describe('config: warnings of settings without effect', () => {
  it('warns of OPENAI_API_KEY without OPENAI_BASE_URL, naming both (no provider is made of it)', () => {
    const config = loadConfig({ OPENAI_API_KEY: 'sk-test' });
    assert.equal(config.providers.openai, undefined);
    assert.equal(config.warnings.length, 1);
    assert.match(
      config.warnings[0],
      /OPENAI_API_KEY is set without OPENAI_BASE_URL: it is ignored/,
    );
  });

  it('says nothing when the key is used, or when there is none', () => {
    const used = loadConfig({
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: 'https://api.openai.com/v1',
    });
    assert.equal(used.providers.openai?.api_key, 'sk-test');
    assert.deepEqual(used.warnings, []);
    assert.deepEqual(loadConfig({}).warnings, []);
    assert.deepEqual(loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:9999/v1' }).warnings, []);
  });
});
