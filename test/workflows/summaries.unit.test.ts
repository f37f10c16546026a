import assert from 'node:assert/strict';
import {
  RunProgress,
  activitySummary,
  formatDuration,
  progressDetails,
  progressStep,
  timerSummary,
  workflowDetails,
  workflowSummary,
} from '../../workflows/summaries';

describe('summaries (D33)', () => {
  it('names a run, its activities and its timer without customer data', () => {
    assert.equal(workflowSummary('hello', 3), 'hello v3');
    assert.equal(
      activitySummary({ id: 'summarize', type: 'llm' }, { rows: [2000, 2999] }),
      'summarize · llm · rows 2,000–2,999',
    );
    assert.equal(
      activitySummary({ id: 'fetch', type: 'http_request' }, { item: 12345 }),
      'fetch · http_request · item 12,345',
    );
    assert.equal(timerSummary(3_600_000), 'run timeout 1h');
    assert.equal(formatDuration(5_400_000), '1h 30m');
    assert.equal(formatDuration(250), '250ms');
    assert.equal(
      workflowDetails([{ type: 'llm' }, { type: 'user_input' }, { type: 'llm' }]),
      '3 nodes: 2 llm, 1 user_input',
    );
    assert.equal(
      progressDetails({ nodesDone: 3, nodes: 7, itemsDone: 1234, items: 10000 }),
      'nodes 3/7 · items 1,234/10,000 · running',
    );
  });

  it('publishes progress on every node, and on every item only while items are few (then at most 1% behind)', () => {
    assert.deepEqual(
      [1, 999, 1000, 9_999, 10_000, 100_000].map(progressStep),
      [1, 1, 10, 10, 100, 1_000],
    );
    // The same steps as counting the count's digits (how it was first written).
    for (const n of [0, 1, 999.9, 1000.5, 99_999, 123_456, 999_999, 1_000_000, 2_500_000])
      assert.equal(
        progressStep(n),
        10 ** Math.max(0, String(Math.max(1, Math.trunc(n))).length - 3),
        String(n),
      );
    const published: string[] = [];
    const progress = new RunProgress(3, (d) => published.push(d));
    assert.deepEqual(published, ['nodes 0/3 · items 0/0 · running']);
    progress.nodeDone();
    progress.itemStarted();
    assert.equal(
      published.at(-1),
      'nodes 1/3 · items 0/1 · running',
      'a single item shows at once',
    );
    published.length = 0;
    for (let i = 1; i < 10_000; i++) progress.itemStarted();
    for (let i = 0; i < 10_000; i++) progress.itemDone();
    assert.ok(published.length <= 2_100, `${published.length} publications for 20,000 changes`);
    assert.equal(
      published.at(-1),
      'nodes 1/3 · items 10,000/10,000 · running',
      'the last item always shows',
    );
    progress.nodeDone();
    progress.ended('completed');
    assert.equal(published.at(-1), 'nodes 2/3 · items 10,000/10,000 · completed');
  });
});
