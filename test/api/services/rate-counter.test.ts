/** D16 counting by group commit: exact positions per request, one write per burst (api/services/rate-counter.ts). */
import assert from 'node:assert/strict';
import type { Store } from '../../../store/db';
import { WINDOW_MS, windowId } from '../../../store/rate-limits';
import { RateCounter } from '../../../api/services/rate-counter';
import { countingCalls } from '../../support/counting';
import { connectTestStore } from '../../support/store';

/** The store's rate-limit collection with its writes counted. */
function countingWrites(store: Store) {
  const { collection: rateLimits, probe } = countingCalls(
    store.collections.rateLimits,
    'findOneAndUpdate',
  );
  return { probe, collections: { rateLimits } };
}

describe('RateCounter (D16)', () => {
  let store: Store;
  before(async () => (store = await connectTestStore()));
  after(async () => store?.close());
  const NOW = Date.UTC(2031, 5, 1, 10, 0, 5);

  it('gives sequential requests one write each and their exact positions', async () => {
    const { probe, collections } = countingWrites(store);
    const counter = new RateCounter(collections);
    const counts = [];
    for (let i = 0; i < 3; i++)
      counts.push((await counter.count('key_seq', 'requests', NOW)).count);
    assert.deepEqual(counts, [1, 2, 3]);
    assert.equal(probe.calls, 3);
    assert.equal(counter.size, 0, 'no lane left behind');
  });

  it('counts 50 concurrent requests with a few writes, each request at its own position, the window at 50', async () => {
    const { probe, collections } = countingWrites(store);
    const counter = new RateCounter(collections);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => counter.count('key_burst', 'starts', NOW)),
    );
    const positions = results.map((r) => r.count).sort((a, b) => a - b);
    assert.deepEqual(
      positions,
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    // The first request writes alone; the 49 that arrived meanwhile share the second write.
    assert.equal(probe.calls, 2);
    const doc = await store.collections.rateLimits.findOne({
      _id: windowId('key_burst', 'starts', NOW),
    });
    assert.equal(doc?.count, 50);
    const windowStart = Math.floor(NOW / WINDOW_MS) * WINDOW_MS;
    assert.ok(
      results.every(
        (r) => r.windowStartMs === windowStart && r.windowEndMs === windowStart + WINDOW_MS,
      ),
    );
    assert.equal(counter.size, 0);
  });

  it('keeps keys, buckets and windows apart', async () => {
    const counter = new RateCounter(store.collections);
    const [a, b, c, d] = await Promise.all([
      counter.count('key_a', 'starts', NOW),
      counter.count('key_b', 'starts', NOW),
      counter.count('key_a', 'requests', NOW),
      counter.count('key_a', 'starts', NOW + WINDOW_MS),
    ]);
    assert.deepEqual([a.count, b.count, c.count, d.count], [1, 1, 1, 1]);
    assert.equal((await counter.count('key_a', 'starts', NOW)).count, 2);
  });

  it('shares the window with another process: counts alternate between two counters without a gap', async () => {
    const one = new RateCounter(store.collections);
    const two = new RateCounter(store.collections);
    const seen = [];
    for (let i = 0; i < 6; i++)
      seen.push((await (i % 2 ? two : one).count('key_shared', 'requests', NOW)).count);
    assert.deepEqual(seen, [1, 2, 3, 4, 5, 6]);
  });

  it('fails every request of a failed write with its error, and counts the next burst afresh', async () => {
    const { probe, collections } = countingWrites(store);
    const counter = new RateCounter(collections);
    probe.fail = new Error('database is down');
    const failed = await Promise.allSettled(
      Array.from({ length: 5 }, () => counter.count('key_fail', 'requests', NOW)),
    );
    assert.ok(
      failed.every(
        (r) => r.status === 'rejected' && (r.reason as Error).message === 'database is down',
      ),
    );
    assert.equal(counter.size, 0);
    probe.fail = null;
    assert.equal(
      (await counter.count('key_fail', 'requests', NOW)).count,
      1,
      'nothing was counted by the failed writes',
    );
  });
});
