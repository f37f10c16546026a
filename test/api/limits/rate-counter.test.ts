/** D16 counting by group commit and leases: exact positions per request, few writes per burst (api/limits/rate-counter.ts). */
import assert from 'node:assert/strict';
import type { Store } from '../../../store/db';
import { WINDOW_MS, windowId, windowStartOf } from '../../../store/rate-limits';
import { RateCounter } from '../../../api/limits/rate-counter';
import { countingCalls } from '../../support/counting';
import { waitFor } from '../../support/http';
import { useTestStore } from '../../support/store';

/** The store's rate-limit collection with its writes counted. */
function countingWrites(store: Store) {
  const { collection: rateLimits, probe } = countingCalls(
    store.collections.rateLimits,
    'findOneAndUpdate',
  );
  return { probe, collections: { rateLimits } };
}

describe('RateCounter (D16)', () => {
  const db = useTestStore();
  const NOW = Date.UTC(2031, 5, 1, 10, 0, 5);
  const LIMIT = 1200; // the default D16 limit of other requests

  it('gives sequential requests one write each and their exact positions', async () => {
    const { probe, collections } = countingWrites(db.store);
    const counter = new RateCounter(collections);
    const counts = [];
    for (let i = 0; i < 3; i++)
      counts.push((await counter.count('key_seq', 'requests', LIMIT, NOW)).count);
    assert.deepEqual(counts, [1, 2, 3]);
    assert.equal(probe.calls, 3);
    assert.equal(counter.size, 0, 'no lane left behind');
  });

  it('counts 50 concurrent requests with two writes, each at its own position, and gives the unused lease back', async () => {
    const { probe, collections } = countingWrites(db.store);
    const counter = new RateCounter(collections);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => counter.count('key_burst', 'requests', LIMIT, NOW)),
    );
    const positions = results.map((r) => r.count).sort((a, b) => a - b);
    assert.deepEqual(
      positions,
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    // The first request writes alone; the 49 that arrived meanwhile share the second write, which
    // also leases the next counts of this busy key. Unused, the lease is given back.
    assert.equal(probe.calls, 2);
    const window = () =>
      db.store.collections.rateLimits.findOne({ _id: windowId('key_burst', 'requests', NOW) });
    await waitFor(async () => ((await window())?.count === 50 ? true : undefined), {
      what: 'the window back at 50',
      intervalMs: 20,
    });
    assert.equal(probe.calls, 3, 'the two writes, then the lease given back');
    const windowStart = windowStartOf(NOW);
    assert.ok(
      results.every(
        (r) => r.windowStartMs === windowStart && r.windowEndMs === windowStart + WINDOW_MS,
      ),
    );
    await waitFor(async () => (counter.size === 0 ? true : undefined), { what: 'no lane left' });
  });

  it('keeps keys, buckets and windows apart', async () => {
    const counter = new RateCounter(db.store.collections);
    const [a, b, c, d] = await Promise.all([
      counter.count('key_a', 'starts', LIMIT, NOW),
      counter.count('key_b', 'starts', LIMIT, NOW),
      counter.count('key_a', 'requests', LIMIT, NOW),
      counter.count('key_a', 'starts', LIMIT, NOW + WINDOW_MS),
    ]);
    assert.deepEqual([a.count, b.count, c.count, d.count], [1, 1, 1, 1]);
    assert.equal((await counter.count('key_a', 'starts', LIMIT, NOW)).count, 2);
  });

  it('shares the window with another process: counts alternate between two counters without a gap', async () => {
    const one = new RateCounter(db.store.collections);
    const two = new RateCounter(db.store.collections);
    const seen = [];
    for (let i = 0; i < 6; i++)
      seen.push((await (i % 2 ? two : one).count('key_shared', 'requests', LIMIT, NOW)).count);
    assert.deepEqual(seen, [1, 2, 3, 4, 5, 6]);
  });

  it('fails every request of a failed write with its error, and counts the next burst afresh', async () => {
    const { probe, collections } = countingWrites(db.store);
    const counter = new RateCounter(collections);
    probe.fail = new Error('database is down');
    const failed = await Promise.allSettled(
      Array.from({ length: 5 }, () => counter.count('key_fail', 'requests', LIMIT, NOW)),
    );
    assert.ok(
      failed.every(
        (r) => r.status === 'rejected' && (r.reason as Error).message === 'database is down',
      ),
    );
    assert.equal(counter.size, 0);
    probe.fail = null;
    assert.equal(
      (await counter.count('key_fail', 'requests', LIMIT, NOW)).count,
      1,
      'nothing was counted by the failed writes',
    );
  });
});
