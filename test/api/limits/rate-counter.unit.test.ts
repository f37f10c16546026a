/**
 * The group commit of api/limits/rate-counter.ts (D16) on its own: a scripted `rateLimits`
 * collection whose `$inc` answers when the test says, so the batching logic is checked without a
 * database. test/api/limits/rate-counter.test.ts runs the same counter against FerretDB.
 */
import assert from 'node:assert/strict';
import { LEASE_SHARE, RateCounter } from '../../../api/limits/rate-counter';
import { waitFor } from '../../support/http';

const NOW = Date.UTC(2031, 5, 1, 10, 0, 5);
/** The default D16 limit of other requests: far from the counts these tests reach. */
const LIMIT = 1200;

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

/** Ten concurrent requests of one key through both their writes (the first alone, then the nine that waited). */
async function burstOfTen(
  db: ReturnType<typeof scriptedCollection>,
  counter: RateCounter,
  limit = LIMIT,
): Promise<number[]> {
  const burst = Array.from({ length: 10 }, () => counter.count('key_a', 'requests', limit, NOW));
  await tick();
  db.release();
  await tick();
  await tick();
  db.release();
  return (await Promise.all(burst)).map((r) => r.count);
}

describe('RateCounter group commit (D16, scripted collection)', () => {
  it('writes once for the first request and once for everything that arrived meanwhile, with exact positions', async () => {
    const db = scriptedCollection();
    const counter = new RateCounter(db.collections);
    const all = Array.from({ length: 10 }, () => counter.count('key_a', 'requests', LIMIT, NOW));
    await tick();
    assert.deepEqual(db.writes, [1], 'the first request writes alone');
    db.release();
    await tick();
    await tick();
    assert.equal(db.writes.length, 2, 'the nine that waited share one $inc');
    db.release();
    const positions = (await Promise.all(all)).map((r) => r.count);
    assert.deepEqual(positions, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('leases the counts of a busy key: the next requests take consecutive positions without a write', async () => {
    const db = scriptedCollection();
    const counter = new RateCounter(db.collections);
    await burstOfTen(db, counter);
    const [, second] = db.writes;
    const lease = second - 9;
    assert.ok(lease >= 1, `the concurrent batch of 9 reserved a lease too: $inc ${second}`);
    const next = await Promise.all(
      Array.from({ length: lease }, () => counter.count('key_a', 'requests', LIMIT, NOW)),
    );
    assert.deepEqual(
      next.map((r) => r.count),
      Array.from({ length: lease }, (_, i) => 11 + i),
    );
    assert.equal(db.writes.length, 2, 'served from the lease');
    assert.equal(counter.size, 1, 'the lane holds its lease');
  });

  it('gives sequential requests one write each and no lease, so every process sees exact counts', async () => {
    const db = scriptedCollection();
    const counter = new RateCounter(db.collections);
    const positions = [];
    for (let i = 0; i < 5; i++) {
      const pending = counter.count('key_a', 'requests', LIMIT, NOW);
      await tick();
      db.release();
      positions.push((await pending).count);
    }
    assert.deepEqual(positions, [1, 2, 3, 4, 5]);
    assert.deepEqual(db.writes, [1, 1, 1, 1, 1]);
    assert.equal(counter.size, 0, 'no lane left behind');
  });

  it('leases nothing once less than a share of the limit is left', async () => {
    const db = scriptedCollection();
    const counter = new RateCounter(db.collections);
    // After the burst of 10, fewer than LEASE_SHARE are left.
    await burstOfTen(db, counter, 10 + LEASE_SHARE - 1);
    assert.deepEqual(db.writes, [1, 9]);
    assert.equal(counter.size, 0);
  });

  it('gives an unused lease back once it expires, and forgets the lane', async () => {
    const db = scriptedCollection();
    const counter = new RateCounter(db.collections);
    await burstOfTen(db, counter);
    const lease = db.writes[1] - 9;
    await waitFor(async () => (db.pending() > 0 ? true : undefined), { intervalMs: 10 });
    db.release();
    assert.deepEqual(db.writes.slice(2), [-lease], 'the whole lease is given back');
    await waitFor(async () => (counter.size === 0 ? true : undefined), { intervalMs: 10 });
  });

  it('keeps keys and buckets apart', async () => {
    const db = scriptedCollection();
    const counter = new RateCounter(db.collections);
    const results = Promise.all([
      counter.count('key_a', 'starts', LIMIT, NOW),
      counter.count('key_b', 'starts', LIMIT, NOW),
      counter.count('key_a', 'requests', LIMIT, NOW),
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
    await assert.rejects(counter.count('key_a', 'requests', LIMIT, NOW), /database down/);
    fail = false;
    assert.equal((await counter.count('key_a', 'requests', LIMIT, NOW)).count, 1);
    assert.equal(counter.size, 0);
  });
});
