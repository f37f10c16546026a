// An API process that shuts down ends its streams (no [DONE]); the client
// reconnects to another API process with Last-Event-ID and gets every event exactly once.
import assert from 'node:assert/strict';
import { startPeerService, startService, type TestService } from '../support/service';
import { newAccount } from '../support/accounts';
import { call } from '../support/http';
import { batchWorkflow } from '../support/fixtures';
import { events, openSse } from '../support/sse';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import { storedLog } from '../support/runs';

const batch = batchWorkflow('batch', ['slow:400 a', 'slow:1200 b', 'slow:2000 c']);

describe('graceful API shutdown', function () {
  this.timeout(60_000);
  let first: TestService;
  let second: TestService;
  let fake: FakeOpenAI;

  before(async () => {
    fake = await startFakeOpenAI();
    first = await startService({ env: { OPENAI_BASE_URL: fake.baseUrl } });
    // A second API process on the same database and task queue, as behind a load balancer.
    second = await startPeerService(first, { env: { OPENAI_BASE_URL: fake.baseUrl } });
  });
  after(async () => {
    await first?.stopWorker();
    await second?.close();
    await fake?.close();
  });

  it('drops open streams on close; the client resumes on another process with every event once', async () => {
    const { key } = await newAccount(first.store.collections);
    assert.equal(
      (await call(first.url, 'POST', '/api/v1/workflows', { key, body: batch })).status,
      201,
    );
    const stream = await openSse(`${first.url}/api/v1/responses`, {
      method: 'POST',
      key,
      body: { workflowId: 'batch', stream: true },
    });
    const created = await stream.until((f) => f.event?.type === 'response.created');
    const runId = created.event.response.run_id;
    await stream.until((f) => f.event?.type === 'response.output_item.done');

    await first.api.close(); // what SIGTERM does in api/main.ts
    await stream.closed;
    assert.notEqual(stream.frames.at(-1)!.data, '[DONE]');
    assert.equal(first.api.pollers.size, 0);
    const lastId = stream.frames.filter((f) => f.id !== undefined).at(-1)!.id!;

    const resumed = await openSse(`${second.url}/api/v1/runs/${runId}/stream`, {
      key,
      headers: { 'Last-Event-ID': lastId },
    });
    await resumed.closed;
    assert.equal(resumed.frames.at(-1)!.data, '[DONE]');
    const stitched = [...events(stream), ...events(resumed).slice(1)];
    assert.deepEqual(stitched, await storedLog(second.store.collections, runId));
  });
});
