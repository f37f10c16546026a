/**
 * The production Temporal of docker-compose.yml runs here: temporal-server at the pinned version on
 * PostgreSQL, its schema created and upgraded by the Compose jobs' own scripts, the namespace job
 * registering the search attributes, and the service on it: a run started, streamed to [DONE], read,
 * and a run cancelled (tools/stack/production-temporal.ts names the stand-ins for the images); the
 * fairness its dynamic configuration turns on for the block and webhook queues.
 */
import assert from 'node:assert/strict';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import { newAccount } from '../support/accounts';
import {
  greetingWorkflow,
  llmWorkflow,
  publish,
  rowsWorkflow,
  waitForRun,
} from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { startService, temporalClient, type TestService } from '../support/service';
import { startWebhookReceiver } from '../fakes/webhook-receiver';
import { webhookWorkflowId } from '../../workflows/definitions';
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

  it("the block queue takes accounts in turn (fairness): another account's big run is not held behind one account's queued blocks, whatever priority they claim (D36)", async () => {
    // The queue the dynamic configuration makes fair (deploy/temporal-dynamicconfig.yaml), one block at a time.
    const fair = await startService({
      stack: prod.stack,
      env: {
        TEMPORAL_TASK_QUEUE: 'wrs-runs',
        WORKER_BLOCKS: '1',
        OPENAI_BASE_URL: fake.baseUrl,
        PRICES: JSON.stringify({ 'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 } }),
      },
    });
    try {
      const a = await newAccount(fair.store.collections, 10);
      const b = await newAccount(fair.store.collections, 10);
      // 400 rows at concurrency 4: four blocks of 100 rows a run, two of them scheduled at once.
      const doc = rowsWorkflow('fair-blocks', 'slow:40 {{row}}', { concurrency: 4 });
      await publish(fair.url, a.key, doc);
      await publish(fair.url, b.key, doc);
      const rowsOf = (tag: string) => Array.from({ length: 400 }, (_, i) => `${tag}-r${i}`);
      // Account A: three `high` runs, six blocks scheduled, one running.
      const aRuns: string[] = [];
      for (const tag of ['a0', 'a1', 'a2'])
        aRuns.push(
          await startRun(
            fair.url,
            a.key,
            'fair-blocks',
            { rows: rowsOf(tag) },
            {
              body: { priority: 'high' },
            },
          ),
        );
      await waitFor(
        async () => fake.requests.some((r) => /a\d-r\d+$/.test(r.prompt)) || undefined,
        {
          what: "account A's first block",
        },
      );
      const bRun = await startRun(fair.url, b.key, 'fair-blocks', { rows: rowsOf('b') });
      const ended = await waitForRun(fair.url, b.key, bRun, 90_000);
      assert.equal(ended.status, 'completed', JSON.stringify(ended.error));
      // The blocks in the order they started (their first call): B's first comes after the one
      // running and at most one more, not after A's five queued ones (first come, first served)
      // nor after all of A's (by priority).
      const started: string[] = [];
      for (const { prompt } of fake.requests) {
        const row = /(a\d|b)-r(\d+)$/.exec(prompt);
        if (!row) continue;
        const block = `${row[1]}:${Math.floor(Number(row[2]) / 100)}`;
        if (!started.includes(block)) started.push(block);
      }
      const before = started.findIndex((block) => block.startsWith('b:'));
      assert.ok(before >= 1 && before <= 2, `blocks started: ${started.join(' ')}`);
      for (const runId of aRuns)
        await call(fair.url, 'POST', `/api/v1/runs/${runId}/cancel`, { key: a.key });
      // Ended before the service closes: a cancelled block's tally left in the queue would reach
      // the next test's worker, whose store holds no key for it.
      for (const runId of aRuns) await waitForRun(fair.url, a.key, runId);
    } finally {
      await fair.close();
    }
  });
  it("the webhook queue takes accounts in turn (fairness): another account's delivery waits for the attempt in the slot, not for all of one account's, whatever priority they claim (D20, D36)", async () => {
    const receiver = await startWebhookReceiver();
    // The queue the dynamic configuration makes fair, one delivery attempt at a time.
    const fair = await startService({
      stack: prod.stack,
      env: {
        TEMPORAL_TASK_QUEUE: 'wrs-runs',
        WORKER_WEBHOOK_DELIVERIES: '1',
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORK: 'true',
      },
    });
    try {
      const a = await newAccount(fair.store.collections, 10);
      const b = await newAccount(fair.store.collections, 10);
      await publish(fair.url, a.key, greetingWorkflow('hooked'));
      await publish(fair.url, b.key, greetingWorkflow('hooked'));
      // Account A: eight `high` runs whose receiver takes 2 s an attempt: one in the slot, the rest queued.
      const HELD = 8;
      receiver.script(
        '/a',
        Array.from({ length: HELD }, () => ({ status: 200, delayMs: 2_000 })),
      );
      const aRuns: string[] = [];
      for (let i = 0; i < HELD; i++)
        aRuns.push(
          await startRun(
            fair.url,
            a.key,
            'hooked',
            { name: `a${i}` },
            { body: { priority: 'high', webhook: `${receiver.url}/a` } },
          ),
        );
      const client = temporalClient(fair);
      await waitFor(
        async () => {
          for (const runId of aRuns) {
            const described = await client.workflow
              .getHandle(webhookWorkflowId(runId))
              .describe()
              .catch(() => undefined);
            // Its attempt scheduled (or already made): the child has started it or has ended.
            if (!described) return undefined;
            if (described.status.name === 'RUNNING' && !described.raw.pendingActivities?.length)
              return undefined;
          }
          return true;
        },
        { what: "every one of account A's deliveries scheduled" },
      );
      // Enough of A's still queued for the order to tell fairness from first come, first served.
      const aBefore = receiver.hitsOn('/a').length;
      assert.ok(aBefore <= HELD - 4, `${aBefore} of A's attempts made before B's run started`);

      await waitForRun(
        fair.url,
        b.key,
        await startRun(
          fair.url,
          b.key,
          'hooked',
          { name: 'b' },
          {
            body: { webhook: `${receiver.url}/b` },
          },
        ),
      );
      await waitFor(async () => receiver.hitsOn('/b').length === 1 || undefined, {
        what: "account B's delivery",
        timeoutMs: 60_000,
      });
      // B's attempt came after the one in the slot when it was scheduled and at most one more, not
      // after A's queued ones (first come, first served) nor after all of A's (by priority).
      const order = receiver.hits.map((hit) => hit.path);
      const aAhead = order.indexOf('/b');
      assert.ok(aAhead <= aBefore + 2, `deliveries in order: ${order.join(' ')}`);
      // Every delivery arrives, each once, before the service closes.
      await waitFor(async () => receiver.hitsOn('/a').length === HELD || undefined, {
        what: "all of account A's deliveries",
        timeoutMs: 60_000,
      });
      assert.equal(receiver.hits.length, HELD + 1);
    } finally {
      await fair.close();
      await receiver.close();
    }
  });
});
