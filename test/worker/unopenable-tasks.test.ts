/**
 * A task whose payloads this installation cannot open (D39: sealed under a run's own key, and the
 * run has no record here: deleted, or another installation's on the same task queue) fails that
 * task and leaves the worker running. The SDK reports such a failure through the codec, whose
 * refusal to seal anything for a run without a record used to stop the whole worker, and every
 * run of the process with it (lib/codec/payload-codec.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import { newAccount } from '../support/accounts';
import { PRICES } from '../support/execution';
import { greetingWorkflow, llmWorkflow, publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { startService, temporalClient, type TestService } from '../support/service';

describe('a task the worker cannot open (D39)', function () {
  this.timeout(120_000);
  let fake: FakeOpenAI;
  const services: TestService[] = [];

  before(async () => {
    fake = await startFakeOpenAI();
  });
  after(async () => {
    for (const svc of services.reverse()) await svc.close();
    await fake?.close();
  });

  it('fails that task; the worker goes on and completes its own runs', async () => {
    // Two installations (each its own database, so its own run keys) on one task queue.
    const env = {
      TEMPORAL_TASK_QUEUE: `shared-${randomUUID().slice(0, 8)}`,
      OPENAI_BASE_URL: fake.baseUrl,
      PRICES,
    };
    const theirs = await startService({ env });
    services.push(theirs);
    const them = await newAccount(theirs.store.collections, 10);
    await publish(theirs.url, them.key, llmWorkflow('ask'));
    const runId = await startRun(theirs.url, them.key, 'ask', { topic: 'slow:60000 theirs' });
    await waitFor(async () => fake.requestsWith('theirs').length > 0 || undefined, {
      what: 'their provider call',
    });
    // Their worker goes away mid-call; the retry of that activity is all the queue holds.
    await theirs.stopWorker();

    const ours = await startService({ env });
    services.push(ours);
    const handle = temporalClient(theirs).workflow.getHandle(runId);
    await waitFor(
      async () => {
        const [call] = (await handle.describe()).raw.pendingActivities ?? [];
        // Two attempts past the one their worker dropped: ours took it, could not open it, failed it.
        return (call?.attempt ?? 0) >= 3 || undefined;
      },
      { what: 'our worker failing their activity', timeoutMs: 60_000 },
    );

    const us = await newAccount(ours.store.collections, 10);
    await publish(ours.url, us.key, greetingWorkflow('greet'));
    const ran = await waitForRun(
      ours.url,
      us.key,
      await startRun(ours.url, us.key, 'greet', { name: 'Ada' }),
      30_000,
    );
    assert.equal(ran.status, 'completed', JSON.stringify(ran.error));

    // Their run was never touched: back with its own worker, it is cancelled as any run is.
    await ours.close();
    services.pop();
    await theirs.startWorker();
    const cancel = await call(theirs.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
      key: them.key,
    });
    assert.ok(cancel.status < 300, JSON.stringify(cancel.body));
    assert.equal((await waitForRun(theirs.url, them.key, runId)).status, 'cancelled');
  });
});
