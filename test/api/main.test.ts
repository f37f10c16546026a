// The API entry (api/main.ts) says at start what its configuration sets to no effect (Config.warnings):
// an OPENAI_API_KEY without OPENAI_BASE_URL is a warning line, not a silent drop.
import assert from 'node:assert/strict';
import { startApiProcess, type ApiProcess } from '../support/api-process';
import { testConfig } from '../support/backend';

describe('api/main.ts at start', function () {
  this.timeout(60_000);
  let api: ApiProcess | undefined;
  after(() => api?.kill());

  it('logs each configuration warning at warn level', async () => {
    api = await startApiProcess(await testConfig(), { env: { OPENAI_API_KEY: 'sk-test' } });
    const line = api
      .output()
      .split('\n')
      .find((l) => l.includes('OPENAI_API_KEY is set without OPENAI_BASE_URL'));
    assert.ok(line, api.output());
    assert.equal((JSON.parse(line) as { level: number }).level, 40);
  });
});
