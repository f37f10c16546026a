/**
 * The group commit of api/services/rate-counter.ts (D16) on its own: a scripted `rateLimits`
 * collection whose `$inc` answers when the test says, so the batching logic is checked without a
 * database. test/api/services/rate-counter.test.ts runs the same counter against FerretDB.
 */
import assert from 'node:assert/strict';
import { RateCounter } from '../../../api/services/rate-counter';

const NOW = Date.UTC(2031, 5, 1, 10, 0, 5);

/** One window counter per _id; each findOneAndUpdate waits until `release()`; writes are recorded. */
function scriptedCollection() {
  const counts = new Map<string, number>();
  const writes: number[] = [];
  let gate: Array<() => void> = [];
  const rateLimits = {
    async findOneAndUpdate(filter: { _id: string }, update: { $inc: { count: number } }) {
      writes.push(update.$inc.count);
      await new Promise<void>((resolve) => gate.push(resolve));
      const count = (counts.get(filter._id) ?? 0) + update.$inc.count;
      counts.set(filter._id, count);
      return { _id: filter._id, count };
    },
  };
  const release = () => {
    const open = gate;
    gate = [];
    for (const resolve of open) resolve();
  };
  return { collections: { rateLimits } as never, writes, release, pending: () => gate.length };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('RateCounter group commit (D16, scripted collection)', () => {
  it('writes once for the first request and once for everything that arrived meanwhile, with exact positions', async () => {
    const db = scriptedCollection();
    const counter = new RateCounter(db.collections);
    const all = Array.from({ length: 10 }, () => counter.count('key_a', 'requests', NOW));
    await tick();
    assert.deepEqual(db.writes, [1], 'the first request writes alone');
    db.release();
    await tick();
    await tick();
    assert.deepEqual(db.writes, [1, 9], 'the nine that waited share one $inc');
    db.release();
    const positions = (await Promise.all(all)).map((r) => r.count);
    assert.deepEqual(positions, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.equal(counter.size, 0, 'no lane left behind');
  });

  it('keeps keys and buckets apart', async () => {
    const db = scriptedCollection();
    const counter = new RateCounter(db.collections);
    const results = Promise.all([
      counter.count('key_a', 'starts', NOW),
      counter.count('key_b', 'starts', NOW),
      counter.count('key_a', 'requests', NOW),
    ]);
    await tick();
    assert.equal(db.pending(), 3, 'three windows, three concurrent writes');
    db.release();
    assert.deepEqual(
      (await results).map((r) => r.count),
      [1, 1, 1],
    );
  });

  it('fails every request of a batch whose write failed, and the next request writes afresh', async () => {
    let fail = true;
    const writes: number[] = [];
    const rateLimits = {
      async findOneAndUpdate(_f: unknown, update: { $inc: { count: number } }) {
        writes.push(update.$inc.count);
        if (fail) throw new Error('database down');
        return { count: update.$inc.count };
      },
    };
    const counter = new RateCounter({ rateLimits } as never);
    await assert.rejects(counter.count('key_a', 'requests', NOW), /database down/);
    fail = false;
    assert.equal((await counter.count('key_a', 'requests', NOW)).count, 1);
    assert.equal(counter.size, 0);
  });
});
