/** lib/codec/retrying.ts: a failed read tried again, with growing pauses, for a bounded time. */
import assert from 'node:assert/strict';
import { retryingFor } from '../../../lib/codec/retrying';

describe('retryingFor', () => {
  it('answers with the first read that succeeds', async () => {
    let reads = 0;
    const value = await retryingFor(5_000, async () => {
      if (++reads < 3) throw new Error(`down ${reads}`);
      return 'up';
    });
    assert.equal(value, 'up');
    assert.equal(reads, 3);
  });

  it('past its window, fails with the last read’s error', async () => {
    let reads = 0;
    await assert.rejects(
      retryingFor(400, async () => {
        throw new Error(`down ${++reads}`);
      }),
      (err: Error) => err.message === `down ${reads}`,
    );
    // Pauses of 100, 200, 400 ms…: a 400 ms window holds two or three reads, not a busy loop.
    assert.ok(reads >= 2 && reads <= 3, `${reads} reads`);
  });
});
