/**
 * D31 on the real stack: the answers of a run's inline rows stay within Temporal's history limit
 * (workflows/history-room.ts, domain/item-blocks.ts inlineRowMaxBytes). Before, 100 rows of 1 MB
 * answers at concurrency 64 passed 50 MB within seconds and Temporal terminated the run, which
 * ended without its output or its webhook. Now a node's rows share 16 MiB, and chunks whose worst
 * case the history has no room for wait for those in flight, or fail their node by name.
 */
import assert from 'node:assert/strict';
import { runToEnd } from '../support/runs';
import { useService } from '../support/use-service';

/** `branches` llm nodes over the same rows, each answering `pad` characters a row into its own output. */
function paddedBranches(slug: string, rows: number, pad: number, branches: number) {
  const asks = Array.from({ length: branches }, (_, b) => b);
  return {
    slug,
    concurrency: 64,
    nodes: [
      {
        id: 'rows',
        type: 'batch',
        rows: Array.from({ length: rows }, (_, i) => `row ${i}`),
      },
      ...asks.flatMap((b) => [
        { id: `ask${b}`, type: 'llm', model: 'gpt-test', prompt: `pad:${pad} {{row}} ${b}` },
        { id: `out${b}`, type: 'user_result', label: `Answers ${b}` },
      ]),
    ],
    edges: asks.flatMap((b) => [
      { from: 'rows', to: `ask${b}`, port: 'row' },
      { from: `ask${b}`, to: `out${b}` },
    ]),
  };
}

describe('the answers of inline rows fit the run’s history (D31)', function () {
  this.timeout(180_000);
  const ctx = useService({ fakeOpenAI: true });
  /** Runs paddedBranches(...) to its end (big answers take a while through the history). */
  const runPadded = (...shape: Parameters<typeof paddedBranches>) =>
    runToEnd(ctx.svc.url, ctx.key, paddedBranches(...shape), {}, 120_000);

  it('fails the rows of a 100-row node past its 16 MiB, and the run ends with its record', async () => {
    const run = await runPadded('wide-answers', 100, 1_000_000, 1);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const items = run.output.answers_0;
    assert.equal(items.length, 100);
    for (const item of items)
      assert.deepEqual(item.error, {
        message:
          'the answer is over the 167772 byte limit of one item: the rows of a node handed on through the run hold at most 16 MiB together (1 MiB a row up to 16 rows)',
        type: 'provider_error',
      });
    assert.equal(run.usage.provider_calls, 100, 'each call made is billed');
  });

  it('fails a node by name once the answers of its run leave no room, instead of being terminated', async () => {
    // Two nodes of 40 rows of 400 KB answers: 32 MB answered, and written again at the run's end.
    const run = await runPadded('two-wide-nodes', 40, 400_000, 2);
    assert.equal(run.status, 'failed', JSON.stringify(run.error));
    assert.match(
      run.error,
      /the run reached the limit of its execution history \(\d+ events, \d+\.\d MB\); split the input into smaller runs/,
    );
    // The calls answered before the node failed are billed; the rest never started.
    const calls = run.usage.provider_calls;
    assert.ok(calls >= 40 && calls < 80, `${calls} calls`);
    assert.equal(ctx.fake.requestsWith('pad:400000').length, calls);
  });
});
