// Webhooks (D20): Standard Webhooks signatures, retries with one webhook-id,
// no redirects, the SSRF guard, and a delivery that never holds up or fails its run.
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { runCli } from '../../cli/run-cli';
import { webhookWorkflowId } from '../../workflows/definitions';
import { webhookMessageId } from '../../domain/run';
import { type TestService, temporalClient } from '../support/service';
import { expectError } from '../support/api-assert';
import {
  greetingWorkflow,
  llmWorkflow,
  publish,
  rowsWorkflow,
  waitForRun,
} from '../support/fixtures';
import { findRunRecord } from '../../store/runs';
import { call, waitFor } from '../support/http';
import {
  startWebhookReceiver,
  type ReceivedHook,
  type WebhookReceiver,
} from '../fakes/webhook-receiver';
import { useService } from '../support/use-service';

/** The account's secret as an operator reads it (D27 CLI). */
async function cliSecret(svc: TestService, accountId: string, rotate = false): Promise<string> {
  const out: string[] = [];
  const code = await runCli(
    ['accounts', 'webhook-secret', accountId, '--json', ...(rotate ? ['--rotate'] : [])],
    {
      collections: svc.store.collections,
      out: (line) => out.push(line),
      err: () => undefined,
    },
  );
  assert.equal(code, 0);
  const shown = JSON.parse(out.join('\n'));
  assert.equal(shown.rotated, rotate);
  assert.match(shown.webhook_secret, /^whsec_[A-Za-z0-9+/]{32}$/); // 24 random bytes
  return shown.webhook_secret;
}

/** Verifies a received request with the reference library; returns the parsed payload. */
function verify(secret: string, hit: ReceivedHook): any {
  const headers = {
    'webhook-id': String(hit.headers['webhook-id']),
    'webhook-timestamp': String(hit.headers['webhook-timestamp']),
    'webhook-signature': String(hit.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(hit.body, headers);
}

/** Starts the `hook` workflow with `webhook`, asserting the documented 400 `invalid_webhook`. */
async function startRefused(svc: { svc: { url: string }; key: string }, webhook: string) {
  const res = await call(svc.svc.url, 'POST', '/api/v1/responses', {
    key: svc.key,
    body: { workflowId: 'hook', inputs: { name: 'x' }, webhook },
  });
  expectError(res, {
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_webhook',
    param: 'webhook',
  });
  return res;
}

describe('webhooks (D20)', function () {
  this.timeout(60_000);
  // Tests deliver to a loopback http receiver: both need the configuration's permission.
  const ctx = useService({
    fakeOpenAI: true,
    env: {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORK: 'true',
      WEBHOOK_RETRY_INITIAL_MS: '100',
    },
  });
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await startWebhookReceiver();
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('hook'));
    // Concurrency 4: a node of more than 8 rows keeps its items in the store (D35).
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('hook-rows', '{{row}}', { concurrency: 4 }));
  });
  after(async () => {
    await receiver?.close();
  });

  const start = async (webhook: string, name = 'Ada') => {
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'hook', inputs: { name }, webhook },
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    return res.body.run_id as string;
  };
  const delivery = (runId: string, status: string) =>
    waitFor(
      async () => {
        const doc = await ctx.svc.store.collections.webhookDeliveries.findOne({
          _id: webhookMessageId(runId),
        });
        return doc?.status === status ? doc : undefined;
      },
      { what: `delivery ${status}` },
    );

  it('POSTs the run record, signed with the account’s whsec_ secret, verifiable with the standardwebhooks package', async () => {
    const secret = await cliSecret(ctx.svc, ctx.accountId);
    const runId = await start(`${receiver.url}/hook?token=abc`);
    const hit = await waitFor(
      async () => receiver.hitsOn('/hook').find((h) => JSON.parse(h.body).id === runId),
      { what: 'the webhook' },
    );
    const payload = verify(secret, hit);
    const read = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    // Exactly what GET /api/v1/runs/{id} answers, but for the delivery's state: the body shows it before this attempt.
    assert.deepEqual({ ...payload, webhook: null }, { ...read.body, webhook: null });
    assert.deepEqual(payload.webhook, {
      status: 'pending',
      attempts: 0,
      last_http_status: null,
      last_error: null,
      updated_at: null,
    });
    assert.equal(payload.status, 'completed');
    assert.equal(payload.output.greeting[0].parts[0].text, 'Hello, Ada!');
    assert.equal(hit.headers['webhook-id'], webhookMessageId(runId));
    assert.equal(hit.headers['content-type'], 'application/json');
    assert.ok(Math.abs(Number(hit.headers['webhook-timestamp']) - Date.now() / 1000) < 60);
    assert.match(String(hit.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
    const doc = await delivery(runId, 'delivered');
    assert.equal(doc.attempts, 1);
    assert.equal(doc.last_status, 200);
    // The caller sees the outcome on the run (D20 `webhook` object).
    const after = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.deepEqual(after.body.webhook, {
      status: 'delivered',
      attempts: 1,
      last_http_status: 200,
      last_error: null,
      updated_at: doc.updated_at.toISOString(),
    });
    const listed = await call(ctx.svc.url, 'GET', '/api/v1/runs?limit=5', { key: ctx.key });
    assert.equal(listed.body.data.find((r: any) => r.id === runId).webhook.status, 'delivered');
    // A wrong secret or an altered body does not verify.
    assert.throws(() => verify(`whsec_${Buffer.alloc(24, 7).toString('base64')}`, hit));
    assert.throws(() => verify(secret, { ...hit, body: hit.body.replace('Ada', 'Eve') }));
  });

  it('a big run’s record arrives whole and verifies: read from its item blocks as it is sent (D31, D35)', async () => {
    const secret = await cliSecret(ctx.svc, ctx.accountId);
    const rows = Array.from({ length: 300 }, (_, i) => `r${i}`);
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'hook-rows', inputs: { rows }, webhook: `${receiver.url}/big` },
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const runId: string = res.body.run_id;
    const hit = await waitFor(
      async () => receiver.hitsOn('/big').find((h) => JSON.parse(h.body).id === runId),
      { what: 'the big run’s webhook' },
    );
    const payload = verify(secret, hit);
    const record = await findRunRecord(ctx.svc.store.collections, runId);
    assert.ok(record?.stored_outputs?.answers, 'the items are kept in the store');
    const read = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.deepEqual({ ...payload, webhook: null }, { ...read.body, webhook: null });
    assert.deepEqual(
      payload.output.answers.map((item: any) => item.parts[0].text),
      rows.map((row) => `echo: ${row}`),
    );
    assert.equal(hit.headers['content-length'], String(Buffer.byteLength(hit.body)));
  });

  it('a run without a webhook delivers nothing', async () => {
    const before = receiver.hits.length;
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'hook', inputs: { name: 'Quiet' } },
    });
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, res.body.run_id)).webhook, null);
    await temporalClient(ctx.svc).workflow.getHandle(res.body.run_id).result();
    assert.equal(receiver.hits.length, before);
    assert.equal(
      await ctx.svc.store.collections.webhookDeliveries.countDocuments({ run_id: res.body.run_id }),
      0,
    );
  });

  it('delivers the failed record of a run whose workflow was terminated from outside (settled by the API, D31)', async () => {
    const secret = await cliSecret(ctx.svc, ctx.accountId);
    await publish(ctx.svc.url, ctx.key, llmWorkflow('hook-held'));
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: {
        workflowId: 'hook-held',
        inputs: { topic: 'hold:terminated-hook' },
        webhook: `${receiver.url}/terminated`,
      },
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const runId = res.body.run_id as string;
    await waitFor(
      async () => ctx.fake.requestsWith('hold:terminated-hook').length > 0 || undefined,
      {
        what: 'the held call',
      },
    );
    await temporalClient(ctx.svc).workflow.getHandle(runId).terminate('an operator stopped it');
    ctx.fake.release('terminated-hook');
    const run = await waitForRun(ctx.svc.url, ctx.key, runId); // its read settles it
    assert.equal(run.status, 'failed');
    const hit = await waitFor(async () => receiver.hitsOn('/terminated')[0], {
      what: 'the webhook of the terminated run',
    });
    const payload = verify(secret, hit);
    assert.equal(payload.id, runId);
    assert.equal(payload.status, 'failed');
    assert.equal(payload.error, run.error);
    assert.equal((await delivery(runId, 'delivered')).attempts, 1);
  });

  it('retries a failing receiver with backoff and the same webhook-id; the run completes meanwhile', async () => {
    const secret = await cliSecret(ctx.svc, ctx.accountId);
    // The first answer is held, so the run is seen completed while its delivery is still in flight.
    receiver.script('/flaky', [{ status: 500, delayMs: 1_500 }, { status: 503 }]);
    const runId = await start(`${receiver.url}/flaky`);
    await waitFor(async () => (receiver.hitsOn('/flaky').length >= 1 ? true : undefined), {
      what: 'first attempt',
    });
    const described = await temporalClient(ctx.svc).workflow.getHandle(runId).describe();
    assert.equal(described.status.name, 'COMPLETED'); // D20: the delivery never holds the run open
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key })).body.status,
      'completed',
    );

    const delivering = await waitFor(
      async () => {
        const run = (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key }))
          .body;
        return run.webhook.status === 'delivering' ? run.webhook : undefined;
      },
      { what: 'the run to show its delivery retrying' },
    );
    assert.ok(delivering.attempts >= 1);
    assert.ok([500, 503].includes(delivering.last_http_status), JSON.stringify(delivering));
    assert.match(delivering.last_error, /answered 50[03]/);
    const doc = await delivery(runId, 'delivered');
    const hits = receiver.hitsOn('/flaky');
    assert.equal(hits.length, 3);
    assert.equal(doc.attempts, 3);
    assert.equal(new Set(hits.map((h) => h.headers['webhook-id'])).size, 1); // one id for every retry
    assert.equal(hits[0].headers['webhook-id'], webhookMessageId(runId));
    for (const hit of hits) assert.equal(verify(secret, hit).id, runId);
    assert.ok(hits[2].at - hits[1].at >= 150, 'backoff grows between attempts');
    const child = await temporalClient(ctx.svc)
      .workflow.getHandle(webhookWorkflowId(runId))
      .result();
    assert.deepEqual(child, { delivered: true });
  });

  it('follows no redirect: a 3xx is a failed attempt, retried, and the redirect target never hears of it', async () => {
    receiver.script('/moved', [
      { status: 307, headers: { location: `${receiver.url}/elsewhere` } },
      { status: 301, headers: { location: `${receiver.url}/elsewhere` } },
    ]);
    const runId = await start(`${receiver.url}/moved`);
    const doc = await delivery(runId, 'delivered');
    assert.equal(doc.attempts, 3);
    assert.equal(receiver.hitsOn('/moved').length, 3);
    assert.equal(receiver.hitsOn('/elsewhere').length, 0);
  });

  it('gives up at once on a 4xx other than 408/429, and the run is unaffected', async () => {
    receiver.script('/gone', [{ status: 410 }]);
    const runId = await start(`${receiver.url}/gone`);
    const doc = await delivery(runId, 'failed');
    assert.equal(doc.attempts, 1);
    assert.equal(doc.last_status, 410);
    assert.match(doc.last_error ?? '', /410/);
    assert.equal(receiver.hitsOn('/gone').length, 1);
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(run.status, 'completed');
    assert.equal(run.webhook.status, 'failed');
    assert.equal(run.webhook.last_http_status, 410);
    const child = await temporalClient(ctx.svc)
      .workflow.getHandle(webhookWorkflowId(runId))
      .result();
    assert.equal(child.delivered, false);
  });

  it('signs with the rotated secret after `accounts webhook-secret --rotate`', async () => {
    const old = await cliSecret(ctx.svc, ctx.accountId);
    const rotated = await cliSecret(ctx.svc, ctx.accountId, true);
    assert.notEqual(rotated, old);
    const runId = await start(`${receiver.url}/rotated`);
    const hit = await waitFor(
      async () => receiver.hitsOn('/rotated').find((h) => JSON.parse(h.body).id === runId),
      { what: 'the webhook' },
    );
    assert.equal(verify(rotated, hit).id, runId);
    assert.throws(() => verify(old, hit));
  });

  it('refuses a webhook that is not an http(s) URL of at most 2,048 characters with 400 invalid_webhook', async () => {
    for (const webhook of [
      'ftp://example.com/x',
      'not a url',
      'javascript:alert(1)',
      `https://example.com/${'a'.repeat(2048)}`,
    ]) {
      await startRefused(ctx, webhook);
    }
  });

  describe('without the configuration’s permission (production defaults)', () => {
    const strict = useService({ env: { WEBHOOK_RETRY_INITIAL_MS: '100' } });

    before(async () => {
      await publish(strict.svc.url, strict.key, greetingWorkflow('hook'));
    });

    for (const host of [
      '127.0.0.1',
      '10.0.0.5',
      '[::1]',
      '169.254.169.254',
      '[::ffff:127.0.0.1]',
      '0.0.0.0',
    ]) {
      it(`refuses a webhook to the literal non-public address ${host} at the start with 400 invalid_webhook`, async () => {
        const res = await startRefused(strict, `https://${host}/hook`);
        assert.match(res.body.error.message, /public address/);
      });
    }

    it('refuses at delivery a host name that resolves to loopback: nothing is sent, the run completes, the caller sees why', async () => {
      const webhook = `https://localhost:${new URL(receiver.url).port}/ssrf`;
      const res = await call(strict.svc.url, 'POST', '/api/v1/responses', {
        key: strict.key,
        body: { workflowId: 'hook', inputs: { name: 'x' }, webhook },
      });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      const runId = res.body.run_id;
      const run = await waitFor(
        async () => {
          const r = (
            await call(strict.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: strict.key })
          ).body;
          return r.webhook?.status === 'failed' ? r : undefined;
        },
        { what: 'the refusal on the run' },
      );
      assert.equal(run.status, 'completed');
      assert.match(run.webhook.last_error, /localhost resolves to .*loopback/);
      assert.equal(run.webhook.last_http_status, null);
      assert.equal(run.webhook.attempts, 1); // refused for good: no retry
      assert.equal(receiver.hitsOn('/ssrf').length, 0);
      const child = await temporalClient(strict.svc)
        .workflow.getHandle(webhookWorkflowId(runId))
        .result();
      assert.equal(child.delivered, false);
    });

    it('refuses an http:// webhook at the start with 400 invalid_webhook', async () => {
      const res = await call(strict.svc.url, 'POST', '/api/v1/responses', {
        key: strict.key,
        body: { workflowId: 'hook', inputs: { name: 'x' }, webhook: `${receiver.url}/plain` },
      });
      expectError(res, {
        status: 400,
        type: 'invalid_request_error',
        code: 'invalid_webhook',
        param: 'webhook',
      });
    });
  });
});
