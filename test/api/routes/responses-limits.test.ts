/**
 * Limits (D10): bodies over 1 MiB are 413 before they are read; deeply nested or huge
 * inputs cannot exhaust the server; the run duration and a node's attempt time are enforced and
 * reported (`failed`, "run timed out").
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { expectError } from '../../support/api-assert';
import { firstText, greetingWorkflow, publish, waitForRun } from '../../support/fixtures';
import { call } from '../../support/http';
import { events, openSse } from '../../support/sse';
import { useService } from '../../support/use-service';
import { startRun } from '../../support/runs';

/** input → llm → result; the prompt carries the fake provider's directives (test/fakes/openai.ts). */
const askWorkflow = (slug: string, prompt: string) => ({
  slug,
  nodes: [
    { id: 'q', type: 'user_input', label: 'Question', input_type: 'text' },
    { id: 'ask', type: 'llm', model: 'gpt-test', prompt },
    { id: 'out', type: 'user_result', label: 'Answer' },
  ],
  edges: [
    { from: 'q', to: 'ask', port: 'question' },
    { from: 'ask', to: 'out' },
  ],
});

describe('limits (D10)', function () {
  this.timeout(120_000);
  describe('request bodies', () => {
    const ctx = useService();
    before(async () => {
      await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet'));
    });

    it('answers a 2 MiB body with 413 request_too_large, before reading it', async () => {
      const runsBefore = await ctx.svc.store.collections.runs.countDocuments({});
      const big = JSON.stringify({
        workflowId: 'greet',
        inputs: { name: 'x'.repeat(2 * 1024 * 1024) },
      });
      expectError(
        await call(ctx.svc.url, 'POST', '/api/v1/responses', { key: ctx.key, body: big }),
        {
          status: 413,
          type: 'invalid_request_error',
          code: 'request_too_large',
        },
      );
      // Only the head is sent: the answer comes from the declared length alone, not after 2 MiB of reading.
      const t0 = Date.now();
      const early = await new Promise<{ status: number; body: any }>((resolve, reject) => {
        const req = http.request(`${ctx.svc.url}/api/v1/responses`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${ctx.key}`,
            'content-type': 'application/json',
            'content-length': String(2 * 1024 * 1024),
          },
        });
        req.on('response', (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        });
        req.on('error', reject);
        req.flushHeaders();
      });
      assert.equal(early.status, 413);
      assert.equal(early.body.error.code, 'request_too_large');
      // Far below a wait for the body that never comes (the bound only tells the two apart, CPU-starved or not).
      assert.ok(Date.now() - t0 < 10_000, `answered after ${Date.now() - t0} ms`);
      assert.equal(await ctx.svc.store.collections.runs.countDocuments({}), runsBefore);
    });

    it('answers inputs nested 10,000 deep with a quick 400 and keeps serving', async () => {
      const arrays = '['.repeat(10_000) + ']'.repeat(10_000);
      const objects = '{"a":'.repeat(10_000) + '"x"' + '}'.repeat(10_000);
      for (const nested of [arrays, objects]) {
        const t0 = Date.now();
        const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
          key: ctx.key,
          body: `{"workflowId":"greet","inputs":{"name":${nested}}}`,
        });
        expectError(res, { status: 400, type: 'invalid_request_error' });
        assert.ok(Date.now() - t0 < 5_000, `took ${Date.now() - t0} ms`);
      }
      const ok = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'greet', inputs: { name: 'still here' } },
      });
      assert.equal(ok.status, 202, JSON.stringify(ok.body));
    });

    it('runs a 900 KB text input to the end without trouble', async () => {
      const name = 'n'.repeat(900 * 1024);
      const t0 = Date.now();
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'greet', inputs: { name } },
      });
      assert.equal(res.status, 202, JSON.stringify(res.body).slice(0, 500));
      assert.ok(Date.now() - t0 < 10_000, `start took ${Date.now() - t0} ms`);
      const run = await waitForRun(ctx.svc.url, ctx.key, res.body.run_id, 60_000);
      assert.equal(firstText(run, 'greeting'), `Hello, ${name}!`);
      // Meanwhile and after, small requests are served as usual.
      const small = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'greet', inputs: { name: 'Bo' } },
      });
      assert.equal(
        firstText(await waitForRun(ctx.svc.url, ctx.key, small.body.run_id), 'greeting'),
        'Hello, Bo!',
      );
    });
  });

  describe('with RUN_TIMEOUT_MS=1500', () => {
    const ctx = useService({ fakeOpenAI: true, env: { RUN_TIMEOUT_MS: '1500' } });

    it('fails a run that outlives RUN_TIMEOUT_MS with "run timed out", in the record and the stream', async () => {
      const { svc, key } = ctx;
      await publish(svc.url, key, askWorkflow('slow', 'slow:5000 {{question}}'));
      const stream = await openSse(`${svc.url}/api/v1/responses`, {
        method: 'POST',
        key,
        body: { workflowId: 'slow', stream: true, inputs: { question: 'q' } },
      });
      await stream.closed;
      const seen = events(stream);
      const runId = seen[0].response.run_id;
      const terminal = seen.at(-1);
      assert.equal(terminal.type, 'response.failed', JSON.stringify(seen));
      assert.equal(terminal.response.error.message, 'run timed out');
      const run = await waitForRun(svc.url, key, runId);
      assert.equal(run.status, 'failed');
      assert.equal(run.error, 'run timed out');
      assert.equal(run.output, null);
      const tookMs = Date.parse(run.completed_at) - Date.parse(run.created_at);
      assert.ok(tookMs >= 1_400 && tookMs < 5_000, `ended after ${tookMs} ms`);
    });
  });

  describe('with NODE_ATTEMPT_TIMEOUT_MS=1000 and NODE_MAX_ATTEMPTS=2', () => {
    const ctx = useService({
      fakeOpenAI: true,
      env: { NODE_ATTEMPT_TIMEOUT_MS: '1000', NODE_MAX_ATTEMPTS: '2' },
    });

    it("fails a run whose node's every attempt outlives NODE_ATTEMPT_TIMEOUT_MS, naming the node", async () => {
      const { svc, key, fake } = ctx;
      await publish(svc.url, key, askWorkflow('slow', 'slow:4000 attempt-timeout {{question}}'));
      const run = await waitForRun(
        svc.url,
        key,
        await startRun(svc.url, key, 'slow', { question: 'q' }),
      );
      assert.equal(run.status, 'failed');
      assert.match(run.error, /\bask\b/);
      assert.match(run.error, /2 attempt/);
      assert.match(run.error, /time/i);
      assert.equal(fake.requestsWith('attempt-timeout').length, 2);
    });
  });
});
