import assert from 'node:assert/strict';
import {
  RunProgress,
  activitySummary,
  formatDuration,
  progressDetails,
  timerSummary,
  workflowDetails,
  workflowSummary,
} from '../../workflows/summaries';

describe('summaries (D33)', () => {
  it('names a run, its activities and its timer without customer data', () => {
    assert.equal(workflowSummary('hello', 3), 'hello v3');
    assert.equal(activitySummary({ id: 'summarize', type: 'llm' }, { rows: [2000, 2999] }), 'summarize · llm · rows 2,000–2,999');
    assert.equal(activitySummary({ id: 'fetch', type: 'http_request' }, { item: 12345 }), 'fetch · http_request · item 12,345');
    assert.equal(timerSummary(3_600_000), 'run timeout 1h');
    assert.equal(formatDuration(5_400_000), '1h 30m');
    assert.equal(formatDuration(250), '250ms');
    assert.equal(workflowDetails([{ type: 'llm' }, { type: 'user_input' }, { type: 'llm' }]), '3 nodes: 2 llm, 1 user_input');
    assert.equal(progressDetails({ nodesDone: 3, nodes: 7, itemsDone: 1234, items: 10000 }), 'nodes 3/7 · items 1,234/10,000 · running');
  });

  it('publishes progress on every node but at most every 2 s while items finish', () => {
    let now = 0;
    const published: string[] = [];
    const progress = new RunProgress(3, (d) => published.push(d), () => now);
    assert.deepEqual(published, ['nodes 0/3 · items 0/0 · running']);
    for (let i = 0; i < 1000; i++) progress.itemStarted();
    for (let i = 0; i < 999; i++) progress.itemDone();
    assert.equal(published.length, 1, 'a burst of items inside one interval publishes nothing');
    now = 2_000;
    progress.itemDone();
    assert.equal(published.at(-1), 'nodes 0/3 · items 1,000/1,000 · running');
    progress.nodeDone();
    assert.equal(published.at(-1), 'nodes 1/3 · items 1,000/1,000 · running');
    progress.ended('completed');
    assert.equal(published.at(-1), 'nodes 1/3 · items 1,000/1,000 · completed');
  });
});
