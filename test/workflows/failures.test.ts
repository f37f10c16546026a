/**
 * Failures in runs on the real stack (D9): an item the provider refuses fails alone and
 * keeps its place downstream, a provider 503 is retried, and node failures (unequal inputs, a
 * provider that stays down) fail the run naming the node.
 */
import assert from 'node:assert/strict';
import { useService } from '../support/use-service';
import { runToEnd } from '../support/runs';
import { LLM_CALL_USD, PRICES, START_FEE_USD, assertItemShape, texts } from '../support/execution';

describe('workflow execution: failures and retries (real Temporal + FerretDB)', function () {
  this.timeout(120_000);

  describe('with the default attempts', () => {
    const ctx = useService({ fakeOpenAI: true, env: { PRICES } });

    it('fails only the batch row the provider refuses (400), keeping the order', async () => {
      const { svc, key, fake } = ctx;
      const doc = {
        slug: 'refused-row',
        nodes: [
          {
            id: 'rows',
            type: 'batch',
            rows: ['row-0', 'row-1', 'row-2 status:400', 'row-3', 'row-4'],
          },
          { id: 'ask', type: 'llm', model: 'gpt-test', prompt: 'Summarize {{row}}' },
          { id: 'out', type: 'user_result', label: 'Summaries' },
          { id: 'tag', type: 'text', template: '[{{s}}]' },
          { id: 'tagged', type: 'user_result', label: 'Tagged' },
          { id: 'all', type: 'join' },
          { id: 'joined', type: 'user_result', label: 'Joined' },
        ],
        edges: [
          { from: 'rows', to: 'ask', port: 'row' },
          { from: 'ask', to: 'out' },
          { from: 'ask', to: 'tag', port: 's' },
          { from: 'tag', to: 'tagged' },
          { from: 'ask', to: 'all' },
          { from: 'all', to: 'joined' },
        ],
      };
      const run = await runToEnd(svc.url, key, doc);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assertItemShape(run);
      const items = run.output.summaries;
      assert.equal(items.length, 5);
      assert.deepEqual(
        items.map((i: any) => i.status),
        ['completed', 'completed', 'failed', 'completed', 'completed'],
      );
      assert.deepEqual(texts(items), [
        'echo: Summarize row-0',
        'echo: Summarize row-1',
        undefined,
        'echo: Summarize row-3',
        'echo: Summarize row-4',
      ]);
      const bad = items[2];
      assert.deepEqual(bad.parts, []);
      assert.equal(bad.error.code, 400);
      assert.match(bad.error.message, /The model refused: status 400/);
      assert.equal(fake.requestsWith('row-2 status:400').length, 1, 'a 400 is not retried');
      // Downstream, the failed item keeps its place and its error names the upstream node and item.
      const tagged = run.output.tagged;
      assert.deepEqual(
        tagged.map((i: any) => i.status),
        ['completed', 'completed', 'failed', 'completed', 'completed'],
      );
      assert.equal(tagged[4].parts[0].text, '[echo: Summarize row-4]');
      assert.match(tagged[2].error.message, /'ask'/);
      assert.match(tagged[2].error.message, /item 2/);
      assert.match(tagged[2].error.message, /The model refused/);
      // A join over a list with a failed item yields one failed item naming it.
      assert.equal(run.output.joined.length, 1);
      assert.equal(run.output.joined[0].status, 'failed');
      assert.match(run.output.joined[0].error.message, /item 2 from node 'ask'/);
    });

    it('retries a provider 503 and succeeds', async () => {
      const { svc, key, fake } = ctx;
      const tag = `t${Date.now()}`;
      const doc = {
        slug: 'flaky-provider',
        nodes: [
          { id: 'ask', type: 'llm', model: 'gpt-test', prompt: `Hello flaky:${tag}:2` },
          { id: 'out', type: 'user_result', label: 'Answer' },
        ],
        edges: [{ from: 'ask', to: 'out' }],
      };
      const run = await runToEnd(svc.url, key, doc);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.deepEqual(texts(run.output.answer), [`echo: Hello flaky:${tag}:2`]);
      assert.equal(fake.requestsWith(`flaky:${tag}:`).length, 3);
      // Only the successful call is billed.
      assert.ok(
        Math.abs(run.total_cost - (START_FEE_USD + LLM_CALL_USD)) < 1e-9,
        `total_cost ${run.total_cost}`,
      );
    });

    it('fails the run naming the node when inputs of an item node have unequal lengths', async () => {
      const { svc, key } = ctx;
      const doc = {
        slug: 'unequal-zip',
        nodes: [
          { id: 'a', type: 'batch', rows: ['x', 'y', 'z'] },
          { id: 'b', type: 'batch', rows: ['1', '2'] },
          { id: 'zip', type: 'text', template: '{{left}}-{{right}}' },
          { id: 'out', type: 'user_result', label: 'Pairs' },
        ],
        edges: [
          { from: 'a', to: 'zip', port: 'left' },
          { from: 'b', to: 'zip', port: 'right' },
          { from: 'zip', to: 'out' },
        ],
      };
      const run = await runToEnd(svc.url, key, doc);
      assert.equal(run.status, 'failed', JSON.stringify(run));
      assert.equal(run.output, null);
      assert.match(run.error, /'zip'/);
      assert.match(run.error, /unequal lengths/);
      assert.match(run.error, /left: 3/);
      assert.match(run.error, /right: 2/);
      assert.ok(typeof run.completed_at === 'string');
    });
  });

  describe('with NODE_MAX_ATTEMPTS=2', () => {
    const ctx = useService({ fakeOpenAI: true, env: { PRICES, NODE_MAX_ATTEMPTS: '2' } });

    it('fails the run naming the node when a provider keeps answering 503', async () => {
      const { svc, key, fake } = ctx;
      const marker = `down-${Date.now()}`;
      const doc = {
        slug: 'provider-down',
        nodes: [
          { id: 'ask_model', type: 'llm', model: 'gpt-test', prompt: `${marker} status:503` },
          { id: 'out', type: 'user_result', label: 'Answer' },
        ],
        edges: [{ from: 'ask_model', to: 'out' }],
      };
      const run = await runToEnd(svc.url, key, doc);
      assert.equal(run.status, 'failed', JSON.stringify(run));
      assert.equal(run.output, null);
      assert.match(run.error, /'ask_model'/);
      assert.match(run.error, /503/);
      assert.match(run.error, /2 attempt/);
      assert.equal(fake.requestsWith(marker).length, 2);
    });
  });
});
