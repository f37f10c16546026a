/**
 * The production Temporal of docker-compose.yml runs here: temporal-server at the pinned version on
 * PostgreSQL, its schema created and upgraded by the Compose jobs' own scripts, the namespace job
 * registering the search attributes, and the service on it: a run started, streamed to [DONE], read,
 * and a run cancelled (tools/stack/production-temporal.ts names the stand-ins for the images).
 */
import assert from 'node:assert/strict';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import { newAccount } from '../support/accounts';
import { llmWorkflow, publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { startService, type TestService } from '../support/service';
import { openSse } from '../support/sse';
import { schemaVersions } from '../../tools/stack/production-temporal';
import { useProductionStack } from './support/production-stack';

describe('production Temporal (temporal-server 1.29.1 on PostgreSQL, the Compose jobs)', function () {
  this.timeout(120_000);
  const prod = useProductionStack();
  let svc: TestService;
  let fake: FakeOpenAI;
  let key: string;

  before(async () => {
    fake = await startFakeOpenAI();
    svc = await startService({
      stack: prod.stack,
      env: {
        OPENAI_BASE_URL: fake.baseUrl,
        PRICES: JSON.stringify({ 'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 } }),
      },
    });
    ({ key } = await newAccount(svc.store.collections, 10));
    await publish(svc.url, key, llmWorkflow('smoke'));
  });
  after(async () => {
    await svc?.close();
    await fake?.close();
  });

  it('the schema jobs: setup upgrades an older schema, then a second setup and the upgrade job change nothing', async () => {
    assert.deepEqual(
      [prod.versionsBefore.temporal.version, prod.versionsBefore.temporal_visibility.version],
      ['1.17', '1.8'],
    );
    assert.deepEqual(
      [prod.versionsAfter.temporal.version, prod.versionsAfter.temporal_visibility.version],
      ['1.18', '1.9'],
    );
    assert.match(prod.setupOutput, /temporal: schema of this admin-tools version/);
    assert.match(prod.setupOutput, /temporal_visibility: schema of this admin-tools version/);
    await prod.jobs.setup();
    await prod.jobs.upgrade();
    assert.deepEqual(await schemaVersions(prod.pg), prod.versionsAfter);
  });

  it('a run completes, streams to [DONE] and reads back; a run in flight is cancelled', async () => {
    const stream = await openSse(`${svc.url}/api/v1/responses`, {
      method: 'POST',
      key,
      body: { workflowId: 'smoke', stream: true, inputs: { topic: 'on PostgreSQL' } },
    });
    assert.equal(stream.status, 200);
    const created = await stream.until((f) => f.event?.type === 'response.created');
    await stream.closed;
    assert.equal(stream.frames.at(-1)?.data, '[DONE]');
    const runId = created.event.response.run_id as string;
    const read = await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
    assert.equal(read.status, 200);
    assert.equal(read.body.status, 'completed');
    assert.equal(read.body.output.answer[0].parts[0].text, 'echo: on PostgreSQL');

    const slow = await startRun(svc.url, key, 'smoke', { topic: 'slow:60000 cancel-on-pg' });
    await waitFor(async () => fake.requestsWith('cancel-on-pg').length > 0 || undefined, {
      what: 'the provider call',
    });
    const cancel = await call(svc.url, 'POST', `/api/v1/runs/${slow}/cancel`, { key });
    assert.ok(cancel.status < 300, JSON.stringify(cancel.body));
    const ended = await waitForRun(svc.url, key, slow);
    assert.equal(ended.status, 'cancelled');
  });
});
