// Every variable X can come from a file named by X_FILE (Docker and Kubernetes secrets).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../config';

describe('config: X_FILE variables', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-config-'));
  const file = (name: string, text: string) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, text);
    return p;
  };

  it('reads a secret from its file, dropping one trailing newline', () => {
    const config = loadConfig({
      FILE_URL_SECRET_FILE: file('secret', `${'s'.repeat(40)}\n`),
      MONGODB_URI_FILE: file('uri', 'mongodb://u:p@db:27017/?tls=true\n'),
      PROVIDERS_FILE: file(
        'providers',
        '{"rep":{"kind":"replicate","base_url":"https://api.example","api_key":"k"}}',
      ),
    });
    assert.equal(config.files.urlSecret, 's'.repeat(40));
    assert.equal(config.mongo.uri, 'mongodb://u:p@db:27017/?tls=true');
    assert.equal(config.providers.rep.api_key, 'k');
  });

  it('validates a value from a file like one from the environment', () => {
    assert.throws(
      () => loadConfig({ FILE_URL_SECRET_FILE: file('short', 'short') }),
      /FILE_URL_SECRET: must be at least 32 characters/,
    );
  });

  it('refuses both X and X_FILE, and names a file it cannot read', () => {
    assert.throws(
      () => loadConfig({ OPENAI_API_KEY: 'a', OPENAI_API_KEY_FILE: file('key', 'b') }),
      /set either OPENAI_API_KEY or OPENAI_API_KEY_FILE, not both/,
    );
    assert.throws(
      () => loadConfig({ TEMPORAL_API_KEY_FILE: path.join(dir, 'missing') }),
      /TEMPORAL_API_KEY_FILE: cannot read .*missing \(ENOENT\)/,
    );
  });
});
