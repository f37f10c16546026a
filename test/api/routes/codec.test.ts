// D32 and D33 as an operator meets them: the Temporal history holds no customer data in
// plaintext, the codec server opens it for the operators' token only, keys rotate, and every
// run, activity and timer carries a readable summary.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { startService, type TestService, temporalClient } from '../../support/service';
import { newAccount } from '../../support/accounts';
import { greetingWorkflow, promptWorkflow, publish, waitForRun } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { allTexts, showHistory } from '../../support/temporal-cli';
import { startWebhookReceiver, type WebhookReceiver } from '../../fakes/webhook-receiver';
import { webhookWorkflowId } from '../../../workflows/definitions';
import { useService } from '../../support/use-service';
import { startRun } from '../../support/runs';

const TOKEN = 'codec-token-'.padEnd(40, 'x');
const UI_ORIGIN = 'http://127.0.0.1:8233';

/** The history events as the CLI prints them. */
const events = (json: string): any[] => JSON.parse(json).events;

/** A payload as the CLI prints it, decoded: shorthand JSON, or `{metadata, data}` with base64 data. */
function payloadValue(p: any): unknown {
  if (p && typeof p === 'object' && typeof p.data === 'string' && p.metadata)
    return JSON.parse(Buffer.from(p.data, 'base64').toString());
  return p;
}

describe('codec and summaries (D32, D33)', function () {
  this.timeout(120_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: {
      CODEC_TOKEN: TOKEN,
      CODEC_CORS_ORIGINS: UI_ORIGIN,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORK: 'true',
    },
  });
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await startWebhookReceiver();
  });
  after(async () => receiver?.close());

  describe('a finished run', () => {
    const marker = randomBytes(6).toString('hex');
    const input = `INPUT-${marker}`;
    const prompt = `PROMPT-${marker}`;
    const hookToken = `HOOKTOKEN-${marker}`;
    let runId: string;
    let plain: string;
    let decoded: string;

    before(async () => {
      await publish(ctx.svc.url, ctx.key, promptWorkflow('secret-flow', prompt));
      const webhook = `${receiver.url}/hooks/run?token=${hookToken}`;
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'secret-flow', inputs: { topic: input }, webhook },
      });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      runId = res.body.run_id;
      const run = await waitForRun(ctx.svc.url, ctx.key, runId);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.match(
        run.output.answer[0].parts[0].text,
        new RegExp(`${prompt} ${input}`),
        'the model saw the prompt and the input',
      );
      await waitFor(async () => (receiver.hitsOn('/hooks/run').length > 0 ? true : undefined), {
        what: 'the webhook',
      });
      plain = await showHistory(ctx.svc.config.temporal.address, runId);
      decoded = await showHistory(ctx.svc.config.temporal.address, runId, {
        endpoint: `${ctx.svc.url}/codec`,
        token: TOKEN,
      });
    });

    it('has no input value, prompt, output text or webhook URL in its Temporal history', async () => {
      const child = await showHistory(ctx.svc.config.temporal.address, webhookWorkflowId(runId));
      for (const [name, dump] of [
        ['run', plain],
        ['webhook child', child],
      ] as const) {
        const texts = allTexts(dump);
        for (const secret of [input, prompt, hookToken, '/hooks/run', 'echo:']) {
          assert.ok(!texts.some((t) => t.includes(secret)), `${name} history shows ${secret}`);
        }
      }
      // The search attributes stay readable for filtering in the Temporal UI.
      const attributes =
        events(plain)[0].workflowExecutionStartedEventAttributes.searchAttributes.indexedFields;
      assert.equal(payloadValue(attributes.WrsAccountId), ctx.accountId);
    });

    it('opens through the codec server for the Temporal CLI (--codec-endpoint, --codec-auth)', () => {
      const texts = allTexts(decoded);
      for (const secret of [input, prompt])
        assert.ok(
          texts.some((t) => t.includes(secret)),
          `decoded history shows ${secret}`,
        );
    });

    it('carries user metadata: the run summary, activity and timer summaries, and current details', async () => {
      const history = events(decoded);
      const started = history.find(
        (e) =>
          e.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED' ||
          e.workflowExecutionStartedEventAttributes,
      );
      assert.equal(payloadValue(started.userMetadata.summary), 'secret-flow v1');
      assert.equal(
        payloadValue(started.userMetadata.details),
        '3 nodes: 1 llm, 1 user_input, 1 user_result',
      );
      const summaries = history
        .filter((e) => e.userMetadata?.summary)
        .map((e) => payloadValue(e.userMetadata.summary));
      assert.ok(summaries.includes('ask · llm · item 0'), JSON.stringify(summaries));
      assert.ok(summaries.includes('run timeout 1h'), JSON.stringify(summaries));
      assert.ok(summaries.includes('finalize run record'), JSON.stringify(summaries));
      const handle = temporalClient(ctx.svc).workflow.getHandle(runId);
      const metadata = await handle.query<{ currentDetails: string }>(
        '__temporal_workflow_metadata',
      );
      assert.equal(metadata.currentDetails, 'nodes 3/3 · items 1/1 · completed');
    });
  });

  describe('the codec server', () => {
    const sealed = async () => {
      const res = await call(ctx.svc.url, 'POST', '/codec/encode', {
        headers: { authorization: `Bearer ${TOKEN}` },
        body: { payloads: [{ metadata: { encoding: b64('json/plain') }, data: b64('"hello"') }] },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body;
    };

    it("encodes and decodes for the operators' token, as a bearer or in the endpoint path", async () => {
      const body = await sealed();
      assert.equal(
        Buffer.from(body.payloads[0].metadata.encoding, 'base64').toString(),
        'binary/encrypted',
      );
      for (const [path, headers] of [
        ['/codec/decode', { authorization: `Bearer ${TOKEN}` }],
        [`/codec/${TOKEN}/decode`, {}],
      ] as const) {
        const res = await call(ctx.svc.url, 'POST', path, { headers, body });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.equal(Buffer.from(res.body.payloads[0].data, 'base64').toString(), '"hello"');
      }
    });

    it('refuses a request without the token, or with another one, and says why', async () => {
      const body = await sealed();
      for (const [path, headers] of [
        ['/codec/decode', {}],
        ['/codec/decode', { authorization: 'Bearer not-the-token' }],
        ['/codec/not-the-token/decode', {}],
        ['/codec/encode', { authorization: `Bearer ${TOKEN}x` }],
      ] as const) {
        const res = await call(ctx.svc.url, 'POST', path, { headers, body });
        assert.equal(res.status, 401, path);
        assert.equal(res.body.error.code, 'invalid_codec_token');
      }
      const bad = await call(ctx.svc.url, 'POST', '/codec/decode', {
        headers: { authorization: `Bearer ${TOKEN}` },
        body: { payloads: 'nope' },
      });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, 'invalid_payloads');
    });

    it('answers CORS preflights of the configured UI origin only', async () => {
      const preflight = (origin: string) =>
        fetch(`${ctx.svc.url}/codec/decode`, {
          method: 'OPTIONS',
          headers: {
            origin,
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'content-type,x-namespace',
          },
        });
      const ok = await preflight(UI_ORIGIN);
      assert.equal(ok.headers.get('access-control-allow-origin'), UI_ORIGIN);
      assert.match(ok.headers.get('access-control-allow-headers') ?? '', /X-Namespace/i);
      assert.equal(
        (await preflight('https://evil.example')).headers.get('access-control-allow-origin'),
        null,
      );
      // The public API keeps answering every origin.
      const api = await fetch(`${ctx.svc.url}/healthz`, {
        headers: { origin: 'https://app.example' },
      });
      assert.equal(api.headers.get('access-control-allow-origin'), '*');
    });
  });
});

describe("the codec server's token in logs (D32)", () => {
  it('never logs the token, even when it travels in the endpoint path', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const svc = await startService({
      worker: false,
      env: { LOG_LEVEL: 'debug', CODEC_TOKEN: TOKEN },
      logDestination: destination,
    });
    try {
      const body = { payloads: [{ metadata: { encoding: b64('json/plain') }, data: b64('"x"') }] };
      assert.equal((await call(svc.url, 'POST', `/codec/${TOKEN}/encode`, { body })).status, 200);
      assert.equal((await call(svc.url, 'POST', `/codec/${TOKEN}x/decode`, { body })).status, 401);
      // Mistyped paths match no route: still logged without the token.
      assert.equal((await call(svc.url, 'GET', `/codec/${TOKEN}/decode`)).status, 405);
      assert.equal((await call(svc.url, 'POST', `/codec/${TOKEN}/decod`, { body })).status, 404);
      assert.equal((await call(svc.url, 'POST', `/codec/${TOKEN}`, { body })).status, 404);
      assert.equal((await call(svc.url, 'POST', `/codec/decode/${TOKEN}`, { body })).status, 404);
      await waitFor(
        async () =>
          lines.filter((l) => l.includes('"path":"/codec/')).length >= 6 ? true : undefined,
        { what: 'the request log lines' },
      );
      assert.ok(
        lines.some((l) => l.includes('"path":"/codec/[redacted]"')),
        lines.join('\n'),
      );
      assert.ok(
        lines.some((l) => l.includes('"path":"/codec/encode"')),
        lines.join('\n'),
      );
      assert.ok(!lines.some((l) => l.includes(TOKEN)), 'a log line holds the codec token');
    } finally {
      await svc.close();
    }
  });
});

describe('payload key rotation (D32)', function () {
  this.timeout(120_000);
  const k1 = `k1:${randomBytes(32).toString('base64')}`;
  const k2 = `k2:${randomBytes(32).toString('base64')}`;
  let first: TestService | undefined;
  let second: TestService | undefined;
  after(async () => {
    await first?.close();
    await second?.close();
  });

  it('after a new key is added, a run sealed with the old one still runs and decodes, and new payloads use the new key', async () => {
    // Before the rotation: a run accepted while no worker runs, so its arguments are sealed with k1 only.
    first = await startService({ worker: false, env: { PAYLOAD_KEYS: k1, CODEC_TOKEN: TOKEN } });
    const { key } = await newAccount(first.store.collections);
    await publish(first.url, key, greetingWorkflow('rotate', 'Hi'));
    const runId = await startRun(first.url, key, 'rotate', { name: 'Ada' });
    const { dbName } = first.config.mongo;
    const { taskQueue, address } = first.config.temporal;
    await first.close();
    first = undefined;

    // The rotation: the same deployment restarted with k2 added (newest last).
    second = await startService({
      env: {
        PAYLOAD_KEYS: `${k1},${k2}`,
        CODEC_TOKEN: TOKEN,
        MONGODB_DB: dbName,
        TEMPORAL_TASK_QUEUE: taskQueue,
      },
    });
    const run = await waitForRun(second.url, key, runId);
    assert.equal(run.status, 'completed', JSON.stringify(run));
    assert.equal(run.output.greeting[0].parts[0].text, 'Hi, Ada!');

    const keyIds = (json: string) => events(json).map((e) => keyIdsOf(e));
    const history = await showHistory(address, runId);
    const ids = keyIds(history);
    assert.deepEqual(
      [...new Set(ids[0])],
      ['k1'],
      'the start (input, summaries) was sealed before the rotation',
    );
    const completed = events(history).findIndex((e) => e.workflowExecutionCompletedEventAttributes);
    assert.deepEqual([...new Set(ids[completed])], ['k2'], 'the result is sealed with the new key');
    const decoded = allTexts(
      await showHistory(address, runId, { endpoint: `${second.url}/codec`, token: TOKEN }),
    );
    assert.ok(
      decoded.some((t) => t.includes('"Ada"')),
      'the rotated codec server opens payloads of both keys',
    );
  });
});

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** The key ids named by every sealed payload inside one history event. */
function keyIdsOf(event: unknown): string[] {
  const ids: string[] = [];
  const walk = (v: any): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      const id = v.metadata?.['encryption-key-id'];
      if (typeof id === 'string') ids.push(Buffer.from(id, 'base64').toString());
      Object.values(v).forEach(walk);
    }
  };
  walk(event);
  return ids;
}
