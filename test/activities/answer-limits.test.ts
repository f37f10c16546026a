/**
 * A hostile provider or HTTP target cannot exhaust the worker's memory (lib/net/read-limited.ts):
 * every answer the worker reads into memory (llm, image_generation and model JSON, an http_request
 * node's JSON or text) is cut off at MAX_ANSWER_BYTES while it is read. On the real stack with
 * the local fakes streaming a 200 MB or endless body: the item fails for good with the documented
 * message, the server saw the connection close near the cap, the worker's process did not grow
 * by the answer's size, and the worker goes on serving runs. All of them together are read within
 * WORKER_ANSWER_BUFFER_BYTES (lib/net/read-budget.ts): answers past it wait, and complete.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../config';
import { STORED_ROW_MAX_BYTES } from '../../domain/item-blocks';
import { DEFAULT_MAX_ANSWER_BYTES } from '../../lib/net/read-limited';
import { streamHugeJson } from '../fakes/huge-body';
import { startFakeReplicate, type FakeReplicate } from '../fakes/replicate';
import { batchWorkflow, firstText, llmWorkflow, rowsWorkflow } from '../support/fixtures';
import { runToEnd } from '../support/runs';
import { useService } from '../support/use-service';

const CAP = 1024 * 1024;
const HUGE = 200 * 1024 * 1024;
// What may be in flight past the cap when the worker closes the connection (socket buffers on loopback).
const SLACK = 16 * 1024 * 1024;
const limitMessage = (who: string, cap = CAP) =>
  `${who}: the answer is over the ${cap} byte limit (MAX_ANSWER_BYTES)`;

/** A workflow document (runToEnd's parameter names only its slug). */
const workflow = (doc: {
  slug: string;
  concurrency?: number;
  nodes: unknown[];
  edges: unknown[];
}) => doc;

/** Runs `fn` while sampling this process's RSS (the worker runs in it); returns its result and the peak growth in bytes. */
async function withPeakRss<T>(fn: () => Promise<T>): Promise<{ result: T; growth: number }> {
  const start = process.memoryUsage().rss;
  let peak = start;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  try {
    const result = await fn();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, growth: peak - start };
  } finally {
    clearInterval(timer);
  }
}

/** The only item of output `key`, which must have failed as a provider's refusal (no status code: nothing was refused by the provider). */
function failedItem(run: any, key: string): { message: string } {
  assert.equal(run.status, 'completed', JSON.stringify(run));
  const items = run.output[key];
  assert.equal(items.length, 1);
  assert.equal(items[0].status, 'failed', JSON.stringify(items[0]));
  assert.equal(items[0].error.type, 'provider_error');
  assert.equal(items[0].error.code, undefined);
  return items[0].error;
}

describe('answers the worker reads are capped (MAX_ANSWER_BYTES)', function () {
  this.timeout(120_000);
  let replicate: FakeReplicate;
  let target: { origin: string; sent: number[]; close(): Promise<void> };
  before(async () => {
    replicate = await startFakeReplicate();
    const sent: number[] = [];
    const server = http.createServer((req, res) => {
      const i = sent.push(0) - 1;
      const size = /^\/huge\/(\d+)$/.exec(req.url ?? '')?.[1];
      void streamHugeJson(res, size ? Number(size) : 'endless', (n) => {
        sent[i] = n;
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    target = {
      origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      sent,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  });
  after(async () => Promise.all([replicate?.close(), target?.close()]));
  const ctx = useService({
    fakeOpenAI: true,
    env: () => ({
      PROVIDERS: JSON.stringify({
        replicate: { kind: 'replicate', base_url: replicate.baseUrl, api_key: 'r8_test' },
      }),
      MAX_ANSWER_BYTES: String(CAP),
      // All the answers the worker reads at once: one and a half of the largest.
      WORKER_ANSWER_BUFFER_BYTES: String(1.5 * CAP),
      MODEL_POLL_MS: '50',
      // The http_request target listens on loopback.
      ALLOW_PRIVATE_NETWORK: 'true',
    }),
  });

  it('defaults to 16 MiB an answer, 128 MiB for all a worker reads at once', () => {
    assert.equal(loadConfig({}).files.maxAnswerBytes, 16 * 1024 * 1024);
    assert.equal(DEFAULT_MAX_ANSWER_BYTES, 16 * 1024 * 1024);
    assert.equal(loadConfig({}).providerCalls.answerBufferBytes, 128 * 1024 * 1024);
  });

  it('reads answers that together pass WORKER_ANSWER_BUFFER_BYTES a few at a time: eight of 0.9 MB at once all complete', async () => {
    const rows = Array.from({ length: 8 }, (_, i) => `pad:900000 row ${i}`);
    const run = await runToEnd(
      ctx.svc.url,
      ctx.key,
      batchWorkflow('padded-answers', rows, '{{row}}'),
      {},
    );
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.deepEqual(
      run.output.answers.map((item: any) => [item.status, item.parts[0].text.length]),
      rows.map(() => ['completed', 900_000]),
    );
  });

  it('an llm answer of 200 MB is cut off at the cap: the item fails once, the process does not grow by it', async () => {
    // A first run warms the worker up (workflow cache, connections): only the answer's effect is measured.
    await runToEnd(ctx.svc.url, ctx.key, llmWorkflow('warm-up'), { topic: 'warm up' });
    const { result: run, growth } = await withPeakRss(() =>
      runToEnd(ctx.svc.url, ctx.key, llmWorkflow('huge-llm'), { topic: `huge:${HUGE}` }),
    );
    assert.equal(failedItem(run, 'answer').message, limitMessage('openai'));
    const calls = ctx.fake.requestsWith(`huge:${HUGE}`);
    assert.equal(calls.length, 1, 'not retried: the same call would send the same answer');
    assert.ok(calls[0].sentBytes > CAP, `${calls[0].sentBytes} bytes sent`);
    assert.ok(calls[0].sentBytes < CAP + SLACK, `${calls[0].sentBytes} bytes sent`);
    assert.ok(growth < 64 * 1024 * 1024, `RSS grew by ${(growth / 1048576).toFixed(1)} MiB`);
  });

  it('an endless llm answer fails the item the same way (nothing waits for its end)', async () => {
    const run = await runToEnd(ctx.svc.url, ctx.key, llmWorkflow('endless-llm'), {
      topic: 'huge:endless',
    });
    assert.equal(failedItem(run, 'answer').message, limitMessage('openai'));
    const [call] = ctx.fake.requestsWith('huge:endless');
    assert.ok(call.sentBytes < CAP + SLACK, `${call.sentBytes} bytes sent`);
  });

  it('an endless image_generation answer is cut off at n times the cap (its images come inline)', async () => {
    const run = await runToEnd(
      ctx.svc.url,
      ctx.key,
      workflow({
        slug: 'endless-images',
        nodes: [
          { id: 'subject', type: 'user_input', label: 'Subject', input_type: 'text' },
          { id: 'draw', type: 'image_generation', model: 'img-test', prompt: '{{subject}}', n: 2 },
          { id: 'out', type: 'user_result', label: 'Images' },
        ],
        edges: [
          { from: 'subject', to: 'draw', port: 'subject' },
          { from: 'draw', to: 'out' },
        ],
      }),
      { subject: 'huge:endless images' },
    );
    assert.equal(failedItem(run, 'images').message, limitMessage('openai', 2 * CAP));
    const [call] = ctx.fake.requestsWith('huge:endless images');
    assert.ok(call.sentBytes < 2 * CAP + SLACK, `${call.sentBytes} bytes sent`);
  });

  it('an endless model poll answer fails the item', async () => {
    const run = await runToEnd(
      ctx.svc.url,
      ctx.key,
      workflow({
        slug: 'endless-model',
        nodes: [
          { id: 'idea', type: 'user_input', label: 'Idea', input_type: 'text' },
          {
            id: 'predict',
            type: 'model',
            provider: 'replicate',
            model: 'owner/video-model',
            input: { prompt: '{{idea}}', scenario: 'huge' },
          },
          { id: 'out', type: 'user_result', label: 'Media' },
        ],
        edges: [
          { from: 'idea', to: 'predict', port: 'idea' },
          { from: 'predict', to: 'out' },
        ],
      }),
      { idea: 'waves' },
    );
    assert.equal(failedItem(run, 'media').message, limitMessage('replicate'));
    const prediction = replicate.predictions.at(-1)!;
    assert.equal(prediction.polls, 1, 'not retried');
    assert.ok(prediction.sentBytes < CAP + SLACK, `${prediction.sentBytes} bytes sent`);
  });

  it('an http_request answer of 200 MB is cut off at the cap', async () => {
    const { result: run, growth } = await withPeakRss(() =>
      runToEnd(
        ctx.svc.url,
        ctx.key,
        workflow({
          slug: 'huge-http',
          nodes: [
            { id: 'where', type: 'user_input', label: 'Url', input_type: 'text' },
            { id: 'call', type: 'http_request', method: 'GET', url: '{{url}}' },
            { id: 'out', type: 'user_result', label: 'Answer' },
          ],
          edges: [
            { from: 'where', to: 'call', port: 'url' },
            { from: 'call', to: 'out' },
          ],
        }),
        { url: `${target.origin}/huge/${HUGE}` },
      ),
    );
    const host = new URL(target.origin).host;
    assert.equal(failedItem(run, 'answer').message, limitMessage(`http ${host}`));
    assert.equal(target.sent.length, 1, 'not retried');
    assert.ok(target.sent[0] < CAP + SLACK, `${target.sent[0]} bytes sent`);
    assert.ok(growth < 64 * 1024 * 1024, `RSS grew by ${(growth / 1048576).toFixed(1)} MiB`);
  });

  it('a row of a big list reads at most 128 KiB of an http_request answer: 200 answers of 600 KB at concurrency 64 fail their items, and the worker holds none of them', async () => {
    const before = target.sent.length;
    const { result: run, growth } = await withPeakRss(() =>
      runToEnd(
        ctx.svc.url,
        ctx.key,
        workflow({
          slug: 'wide-http',
          concurrency: 64, // 200 rows: more than twice that, so the rows are kept in the store (D35)
          nodes: [
            { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'json' },
            { id: 'split', type: 'batch' },
            {
              id: 'call',
              type: 'http_request',
              method: 'GET',
              url: `${target.origin}/huge/{{row}}`,
            },
            { id: 'out', type: 'user_result', label: 'Answers' },
          ],
          edges: [
            { from: 'rows', to: 'split', port: 'rows' },
            { from: 'split', to: 'call', port: 'row' },
            { from: 'call', to: 'out' },
          ],
        }),
        { rows: Array.from({ length: 200 }, () => 600_000) },
        120_000,
      ),
    );
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const host = new URL(target.origin).host;
    const errors = new Set(run.output.answers.map((item: any) => item.error?.message));
    assert.deepEqual(
      [...errors],
      [
        `http ${host}: the answer is over the ${STORED_ROW_MAX_BYTES} byte limit of one item: a row of a big list (D35), or of a node of 128 rows or more, holds at most 128 KiB`,
      ],
    );
    const sent = target.sent.slice(before);
    assert.equal(sent.length, 200, 'one request a row, not retried');
    assert.ok(Math.max(...sent) < STORED_ROW_MAX_BYTES + SLACK, `${Math.max(...sent)} bytes sent`);
    assert.ok(growth < 128 * 1024 * 1024, `RSS grew by ${(growth / 1048576).toFixed(1)} MiB`);
  });

  it('an llm row of a big list whose answer passes 128 KiB fails its item, the call still counted', async () => {
    const run = await runToEnd(
      ctx.svc.url,
      ctx.key,
      rowsWorkflow('wide-llm', '{{row}}', { concurrency: 2 }), // 6 rows: kept in the store (D35)
      { rows: ['huge:200000', 'short', 'huge:200000', 'short', 'short', 'short'] },
    );
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.deepEqual(
      run.output.answers.map((item: any) => item.error?.message ?? item.parts[0].text),
      [
        `the answer is over the ${STORED_ROW_MAX_BYTES} byte limit of one item: a row of a big list (D35), or of a node of 128 rows or more, holds at most 128 KiB`,
        'echo: short',
        `the answer is over the ${STORED_ROW_MAX_BYTES} byte limit of one item: a row of a big list (D35), or of a node of 128 rows or more, holds at most 128 KiB`,
        'echo: short',
        'echo: short',
        'echo: short',
      ],
    );
    assert.equal(run.usage.provider_calls, 6, 'the calls were made: counted (and billed) as made');
  });

  it('the worker goes on serving runs, and an answer under the cap is read whole', async () => {
    const run = await runToEnd(ctx.svc.url, ctx.key, llmWorkflow('after-huge'), {
      topic: 'still here',
    });
    assert.equal(firstText(run, 'answer'), 'echo: still here');
    const half = await runToEnd(ctx.svc.url, ctx.key, llmWorkflow('half-cap'), {
      topic: `huge:${CAP / 2}`,
    });
    assert.match(firstText(half, 'answer'), /^a{500000,}$/);
  });
});
