/**
 * The webhook queue (D20, worker/create-worker.ts): delivery attempts are scheduled on the run task
 * queue's `-webhooks` queue, from which a worker takes at most WORKER_WEBHOOK_DELIVERIES at once. A
 * tenant whose receiver holds every connection (up to WEBHOOK_TIMEOUT_MS an attempt, retried for
 * 24 h) ties up those slots only: with more held deliveries than a worker has activity slots (100),
 * another account's run still completes, and every delivery arrives once the receiver answers.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PRICES } from '../support/execution';
import { greetingWorkflow, llmWorkflow, publish, waitForRun } from '../support/fixtures';
import { waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { useService } from '../support/use-service';

const DELIVERIES = 110; // more than the run task queue's 100 activity slots
const SLOTS = 4;

/** A receiver that holds every request until `release()`, then answers each 200 at once. */
async function startTarpit() {
  const held: http.ServerResponse[] = [];
  let open = true;
  let received = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    received++;
    if (open) held.push(res);
    else res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => held.length,
    received: () => received,
    release() {
      open = false;
      for (const res of held.splice(0)) res.end('ok');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('webhook queue: deliveries wait in their own slots (D20)', function () {
  this.timeout(180_000);
  const ctx = useService({
    fakeOpenAI: true,
    credit: 100,
    env: {
      PRICES,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORK: 'true',
      WEBHOOK_TIMEOUT_MS: '50000',
      WORKER_WEBHOOK_DELIVERIES: String(SLOTS),
      RATE_LIMIT_STARTS_PER_MINUTE: '1000',
    },
  });
  let tarpit: Awaited<ReturnType<typeof startTarpit>>;

  before(async () => {
    tarpit = await startTarpit();
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet'));
  });
  after(async () => tarpit?.close());

  it('receivers that hold every delivery take WORKER_WEBHOOK_DELIVERIES slots, not the runs’: another account’s run completes', async () => {
    // One after another: a burst of 110 would load the machine the other test processes share.
    const runIds: string[] = [];
    for (let i = 0; i < DELIVERIES; i++)
      runIds.push(
        await startRun(
          ctx.svc.url,
          ctx.key,
          'greet',
          { name: `n${i}` },
          { body: { webhook: `${tarpit.url}/hold` } },
        ),
      );
    await waitFor(async () => (tarpit.held() >= SLOTS ? true : undefined), {
      what: `the receiver holding ${SLOTS} deliveries`,
      timeoutMs: 60_000,
    });

    // Another account's run needs the run task queue's activity slots: they are free.
    const other = await ctx.newAccount(10);
    await publish(ctx.svc.url, other.key, llmWorkflow('ask'));
    const run = await waitForRun(
      ctx.svc.url,
      other.key,
      await startRun(ctx.svc.url, other.key, 'ask', { topic: 'tides' }),
      30_000, // held attempts give their slots back only at WEBHOOK_TIMEOUT_MS (50 s)
    );
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.equal(tarpit.held(), SLOTS, 'no delivery past the worker’s webhook slots started');

    // Once the receiver answers, every delivery arrives, each once.
    tarpit.release();
    const c = ctx.svc.store.collections;
    await waitFor(
      async () =>
        (await c.webhookDeliveries.countDocuments({
          run_id: { $in: runIds },
          status: 'delivered',
        })) === DELIVERIES
          ? true
          : undefined,
      { what: 'every delivery delivered', timeoutMs: 120_000 },
    );
    assert.equal(tarpit.received(), DELIVERIES);
  });
});
