/**
 * The MongoDB side of rate limits (D16) and idempotency keys (D18): one window document
 * per key, bucket and minute; expired documents removed by a TTL index where the server has one
 * and by the sweep where it does not (FerretDB v1, which these tests run on).
 */
import assert from 'node:assert/strict';
import { ensureExpiryIndexes, sweepExpired } from '../../store/expiry';
import {
  canonicalJson,
  claimIdempotencyKey,
  idempotencyId,
  requestHash,
} from '../../store/idempotency';
import { countRequest, WINDOW_MS } from '../../store/rate-limits';
import { useTestStore } from '../support/store';

describe('store: rate-limit windows and idempotency keys (D16, D18)', function () {
  this.timeout(60_000);
  const db = useTestStore();

  it('counts per key, bucket and one-minute window, in one document each', async () => {
    const c = db.store.collections;
    const t = Date.UTC(2030, 0, 1, 12, 30, 15);
    assert.equal((await countRequest(c, 'key_a', 'starts', t)).count, 1);
    assert.equal((await countRequest(c, 'key_a', 'starts', t + 44_000)).count, 2);
    assert.equal((await countRequest(c, 'key_a', 'requests', t)).count, 1);
    assert.equal((await countRequest(c, 'key_b', 'starts', t)).count, 1);
    const next = await countRequest(c, 'key_a', 'starts', t + 45_000); // 12:31:00, a new window
    assert.equal(next.count, 1);
    assert.equal(next.windowStartMs, Date.UTC(2030, 0, 1, 12, 31));
    assert.equal(next.windowEndMs - next.windowStartMs, WINDOW_MS);
    const doc = await c.rateLimits.findOne({
      _id: `key_a:starts:${Date.UTC(2030, 0, 1, 12, 30) / WINDOW_MS}`,
    });
    assert.equal(doc?.count, 2);
    assert.equal(doc?.expires_at.getTime(), Date.UTC(2030, 0, 1, 12, 32));
  });

  it('expires windows and keys by TTL index, or by the sweep where TTL indexes are missing', async () => {
    const c = db.store.collections;
    const ttl = await ensureExpiryIndexes([c.rateLimits, c.idempotencyKeys]);
    const names = (await c.rateLimits.indexes()).map((i) => i.name);
    assert.ok(names.includes(ttl ? 'expires_at_ttl' : 'expires_at'), names.join());
    const past = new Date(Date.now() - 1_000);
    const future = new Date(Date.now() + 60_000);
    await c.rateLimits.insertMany([
      { _id: 'old', key_id: 'k', bucket: 'starts', window_start: past, count: 1, expires_at: past },
      {
        _id: 'live',
        key_id: 'k',
        bucket: 'starts',
        window_start: past,
        count: 1,
        expires_at: future,
      },
    ]);
    await sweepExpired([c.rateLimits, c.idempotencyKeys]);
    assert.deepEqual(
      (await c.rateLimits.find({ _id: { $in: ['old', 'live'] } }).toArray()).map((d) => d._id),
      ['live'],
    );
  });

  it('lets one of many concurrent claims of a key win, and hashes requests canonically', async () => {
    const c = db.store.collections;
    const id = idempotencyId('acct_x', 'k1');
    const now = Date.now();
    const claims = Array.from({ length: 20 }, (_, i) => ({
      _id: id,
      account_id: 'acct_x',
      key: 'k1',
      request_hash: 'h',
      run_id: `run_${i}`,
      created_at: new Date(now),
      expires_at: new Date(now + 60_000),
    }));
    const owners = await Promise.all(claims.map((claim) => claimIdempotencyKey(c, claim)));
    assert.equal(new Set(owners.map((o) => o.run_id)).size, 1);
    assert.equal(
      canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: null } }),
      '{"a":{"c":null,"d":[2,{"e":0,"f":1}]},"b":1}',
    );
    assert.equal(requestHash({ a: 1, b: 2 }), requestHash({ b: 2, a: 1 }));
    assert.notEqual(requestHash({ a: 1 }), requestHash({ a: '1' }));
  });
});
