/**
 * The worker's budget of answer bytes (lib/net/read-budget.ts) and readLimited reading under it:
 * readers past the budget pause until others give bytes back, the oldest reader always goes on
 * (so readers never wait on each other in a circle), a cancelled wait rejects, and every reader
 * gives back what it took whether its body was read, too large or failed.
 */
import assert from 'node:assert/strict';
import { PassThrough, Readable } from 'node:stream';
import { ReadBudget } from '../../../lib/net/read-budget';
import { AnswerTooLargeError, readLimited } from '../../../lib/net/read-limited';

/** Whether `promise` has settled after the queued callbacks ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('ReadBudget: the bytes of answers a worker holds at once', () => {
  it('takes chunks while they fit, pauses a reader past the budget, and lets it go when another gives back', async () => {
    const budget = new ReadBudget(100);
    const first = budget.reader();
    const second = budget.reader();
    await first.take(60);
    await second.take(30);
    const waiting = second.take(20);
    assert.equal(await settled(waiting), false, '110 bytes do not fit 100');
    first.done();
    assert.equal(await settled(waiting), true);
    assert.equal(budget.held, 50);
    second.done();
    assert.equal(budget.held, 0);
  });

  it('always lets the oldest reader go on, past the budget: readers never wait on each other in a circle', async () => {
    const budget = new ReadBudget(100);
    const oldest = budget.reader();
    const younger = budget.reader();
    await younger.take(90);
    await oldest.take(50); // over the budget, but the oldest in flight
    assert.equal(budget.held, 140);
    const waiting = younger.take(10);
    assert.equal(await settled(waiting), false);
    oldest.done(); // the younger one is the oldest now
    assert.equal(await settled(waiting), true);
    younger.done();
    assert.equal(budget.held, 0);
  });

  it('a cancelled wait rejects with the signal’s reason, taking nothing', async () => {
    const budget = new ReadBudget(10);
    const oldest = budget.reader();
    await oldest.take(10);
    const other = budget.reader();
    const abort = new AbortController();
    const waiting = other.take(5, abort.signal);
    abort.abort(new Error('run cancelled'));
    await assert.rejects(waiting, /run cancelled/);
    other.done();
    oldest.done();
    assert.equal(budget.held, 0);
  });

  it('readLimited reads under it: a body past the budget waits for another to be read, and each gives back its bytes', async () => {
    const budget = new ReadBudget(1_000);
    const first = new PassThrough();
    const second = new PassThrough();
    const one = readLimited(first, 10_000, undefined, { budget });
    const two = readLimited(second, 10_000, undefined, { budget });
    first.write(Buffer.alloc(800));
    second.write(Buffer.alloc(600)); // over the budget: the second body waits
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(budget.held, 800);
    first.end(Buffer.alloc(100));
    assert.equal((await one).length, 900);
    second.end();
    assert.equal((await two).length, 600);
    assert.equal(budget.held, 0);
    // A body over its cap gives back what it took too.
    await assert.rejects(
      readLimited(Readable.from([Buffer.alloc(600), Buffer.alloc(600)]), 1_000, undefined, {
        budget,
      }),
      AnswerTooLargeError,
    );
    assert.equal(budget.held, 0);
  });
});
