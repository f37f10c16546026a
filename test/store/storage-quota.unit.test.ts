/**
 * The storage quota's check and hold (store/storage-quota.ts): writes of one process that arrive
 * while the account's sum is being read all wait for that one read, and must then see each
 * other's holds, so together they fit the quota as they would one by one.
 */
import assert from 'node:assert/strict';
import type { Collections } from '../../store/db';
import { StorageQuota } from '../../store/storage-quota';

/** An accounts collection with no account's own quota, read in a tick like the store's answer. */
const noOwnQuota = {
  accounts: { findOne: async () => null },
} as unknown as Pick<Collections, 'accounts'>;

/** A quota of `quota` bytes whose sum the store answers (0 bytes held) when `answer()` is called. */
function quotaWithPendingSum(quota: number) {
  let answer!: () => void;
  const read = new Promise<number>((resolve) => (answer = () => resolve(0)));
  const storage = new StorageQuota(noOwnQuota, {
    used: () => read,
    cap: 'max_workflow_storage_bytes',
    defaultBytes: quota,
    largestWrite: 100,
  });
  return { storage, answer };
}

describe('storage quota: the check and the hold of concurrent writes', () => {
  it('lets writes that waited for one read of the sum fit the quota together, no more', async () => {
    const { storage, answer } = quotaWithPendingSum(1_000);
    const reservations = Array.from({ length: 25 }, () => storage.reserve('acct_a', 100));
    answer();
    const fits = (await Promise.all(reservations)).filter((r) => r.fits);
    assert.equal(fits.length, 10, `${fits.length} writes of 100 bytes fit a quota of 1,000`);
    for (const r of fits) r.release();
    assert.equal((await storage.room('acct_a')).room, 1_000, 'released holds give the room back');
  });

  it('counts what it lets in, in the same step as the check (a big run’s items, D35)', async () => {
    const { storage, answer } = quotaWithPendingSum(1_000);
    const takes = Array.from({ length: 25 }, () => storage.take('acct_a', 100));
    answer();
    const fits = (await Promise.all(takes)).filter((t) => t.fits);
    assert.equal(fits.length, 10, `${fits.length} items of 100 bytes fit a quota of 1,000`);
    assert.deepEqual(await storage.room('acct_a'), { room: 0, used: 1_000, quota: 1_000 });
  });

  it('keeps what it let in counted while the store’s sum is read anew without it, until settled', async () => {
    let stored = 0; // the store's sum: what the block recorded
    const storage = new StorageQuota(
      noOwnQuota,
      {
        used: async () => stored,
        cap: 'max_file_storage_bytes',
        defaultBytes: 1_000,
        largestWrite: 100,
      },
      { staleMs: 0, nearMs: 0 }, // every check reads the sum anew
    );
    assert.equal((await storage.take('acct_a', 600)).fits, true);
    assert.deepEqual(
      (await Promise.all([storage.take('acct_a', 600), storage.take('acct_a', 400)])).map(
        (t) => t.fits,
      ),
      [false, true],
      'the sum read anew lacks the 600 bytes not recorded yet; the quota still holds them',
    );
    stored = 600;
    storage.settle('acct_a', 600, true); // recorded: the sum has them, the hold goes
    assert.deepEqual(await storage.room('acct_a'), { room: 0, used: 1_000, quota: 1_000 });
    storage.settle('acct_a', 400, false); // never recorded (a failed write)
    assert.deepEqual(await storage.room('acct_a'), { room: 400, used: 600, quota: 1_000 });
  });

  it('holds the most a write of unknown length may grow to', async () => {
    const { storage, answer } = quotaWithPendingSum(250);
    const reservations = Array.from({ length: 5 }, () => storage.reserve('acct_a', 0));
    answer();
    const results = await Promise.all(reservations);
    // 100 held, 100 held, then the 50 left held by the third; nothing is left for the rest.
    assert.deepEqual(
      results.map((r) => r.fits),
      [true, true, true, false, false],
    );
  });
  it('reads the sum anew after forget, also when a read began before the delete (a run deleted, D39)', async () => {
    let stored = 500;
    let answers: Array<() => void> = [];
    const storage = new StorageQuota(noOwnQuota, {
      used: () => {
        const sum = stored;
        return new Promise<number>((resolve) => answers.push(() => resolve(sum)));
      },
      cap: 'max_file_storage_bytes',
      defaultBytes: 1_000,
      largestWrite: 100,
    });
    const before = storage.room('acct_a'); // a read of the sum before the delete
    stored = 100; // the run's 400 bytes go
    storage.forget('acct_a');
    const after = storage.room('acct_a');
    for (const answer of answers) answer();
    answers = [];
    assert.equal((await before).used, 500, 'the read under way answers its own waiter');
    assert.equal((await after).used, 100, 'a check after the delete reads it anew');
    assert.equal((await storage.room('acct_a')).used, 100, 'and that sum is the one remembered');
  });
});
