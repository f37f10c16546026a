/** lib/retrying.ts: an operation tried again, with growing pauses, for a bounded time. */
import assert from 'node:assert/strict';
import { retrying } from '../../lib/retrying';

describe('retrying', () => {
  const always = { retryable: () => true };

  it('answers with the first try that succeeds', async () => {
    let reads = 0;
    const value = await retrying(
      async () => {
        if (++reads < 3) throw new Error(`down ${reads}`);
        return 'up';
      },
      { forMs: 5_000, ...always },
    );
    assert.equal(value, 'up');
    assert.equal(reads, 3);
  });

  it('past its window, fails with the last try’s error', async () => {
    let reads = 0;
    await assert.rejects(
      retrying(
        async () => {
          throw new Error(`down ${++reads}`);
        },
        { forMs: 400, ...always },
      ),
      (err: Error) => err.message === `down ${reads}`,
    );
    // Pauses of 100, 200, 400 ms…: a 400 ms window holds two or three reads, not a busy loop.
    assert.ok(reads >= 2 && reads <= 3, `${reads} reads`);
  });

  it('throws a failure not worth waiting for at once', async () => {
    let reads = 0;
    await assert.rejects(
      retrying(
        async () => {
          throw new Error(`refused ${++reads}`);
        },
        { forMs: 5_000, retryable: () => false },
      ),
      /refused 1/,
    );
    assert.equal(reads, 1);
  });
});
