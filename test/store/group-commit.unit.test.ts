/**
 * The group commit of store/group-commit.ts on its own, with a scripted flush that answers when
 * the test says: a lone write goes out at once, writes arriving during a flush go out together
 * next, batches are bounded, and every caller gets its own outcome (errors never swallowed).
 * test/store/run-writes.test.ts runs the same committer against FerretDB.
 */
import assert from 'node:assert/strict';
import { GroupCommit, type Outcome } from '../../store/group-commit';

const tick = () => new Promise((r) => setImmediate(r));

/** A flush that records each batch and answers only on `release(...)` (ok for every item unless told). */
function scriptedFlush<T>() {
  const batches: T[][] = [];
  const gates: Array<(answer: () => Outcome<string>[]) => void> = [];
  const flush = (items: T[]) => {
    batches.push(items);
    return new Promise<Outcome<string>[]>((resolve, reject) =>
      gates.push((answer) => {
        try {
          resolve(answer());
        } catch (err) {
          reject(err);
        }
      }),
    );
  };
  const okAll = (items: T[]) => items.map((i) => ({ ok: true as const, value: `done ${i}` }));
  /** Answers the oldest batch in flight; `answer` defaults to every item ok. */
  const release = (answer?: (items: T[]) => Outcome<string>[]) => {
    const gate = gates.shift();
    assert.ok(gate, 'no batch in flight');
    const items = batches[batches.length - 1 - gates.length];
    gate(() => (answer ?? okAll)(items));
  };
  return { flush, batches, release, inFlight: () => gates.length };
}

/** The outcome of a promise without throwing: its value or its error. */
const settle = <R>(p: Promise<R>) =>
  p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe('GroupCommit (scripted flush)', () => {
  it('sends a lone write at once, and what arrives during its flush as one batch next', async () => {
    const script = scriptedFlush<number>();
    const commit = new GroupCommit(script.flush);
    const first = commit.submit(1);
    await tick();
    assert.deepEqual(script.batches, [[1]], 'the first write goes out alone, without waiting');
    const later = [2, 3, 4].map((n) => commit.submit(n));
    await tick();
    assert.equal(script.inFlight(), 1, 'no second command while the first is in flight');
    script.release();
    assert.equal(await first, 'done 1');
    await tick();
    assert.deepEqual(script.batches, [[1], [2, 3, 4]], 'the waiting writes share one command');
    script.release();
    assert.deepEqual(await Promise.all(later), ['done 2', 'done 3', 'done 4']);
    assert.deepEqual(commit.stats, { batches: 2, items: 4, waiting: 0 });
  });

  it('groups writes made in the same tick', async () => {
    const script = scriptedFlush<number>();
    const commit = new GroupCommit(script.flush);
    const all = [1, 2, 3].map((n) => commit.submit(n));
    await tick();
    assert.deepEqual(script.batches, [[1, 2, 3]]);
    script.release();
    assert.deepEqual(await Promise.all(all), ['done 1', 'done 2', 'done 3']);
  });

  it('resolves no caller before its batch is acknowledged', async () => {
    const script = scriptedFlush<number>();
    const commit = new GroupCommit(script.flush);
    let resolved = false;
    const p = commit.submit(1).then(() => (resolved = true));
    await tick();
    await tick();
    assert.equal(resolved, false);
    script.release();
    await p;
    assert.equal(resolved, true);
  });

  it('bounds batches at maxBatch, in arrival order', async () => {
    const script = scriptedFlush<number>();
    const commit = new GroupCommit(script.flush, 2);
    const first = commit.submit(0);
    await tick();
    const rest = [1, 2, 3, 4, 5].map((n) => commit.submit(n));
    script.release();
    await first;
    for (let i = 0; i < 3; i++) {
      await tick();
      script.release();
    }
    assert.equal((await Promise.all(rest)).length, 5);
    assert.deepEqual(script.batches, [[0], [1, 2], [3, 4], [5]]);
  });

  it('fails only the caller whose own write failed', async () => {
    const script = scriptedFlush<number>();
    const commit = new GroupCommit(script.flush);
    const calls = [1, 2, 3].map((n) => settle(commit.submit(n)));
    await tick();
    const duplicate = Object.assign(new Error('E11000 duplicate key'), { code: 11000 });
    script.release((items) =>
      items.map((n) =>
        n === 2
          ? { ok: false as const, error: duplicate }
          : { ok: true as const, value: `ok ${n}` },
      ),
    );
    assert.deepEqual(await Promise.all(calls), [
      { value: 'ok 1' },
      { error: duplicate },
      { value: 'ok 3' },
    ]);
  });

  it('fails every caller of a batch whose command failed, and carries on with the next batch', async () => {
    const script = scriptedFlush<number>();
    const commit = new GroupCommit(script.flush);
    const first = settle(commit.submit(1));
    await tick();
    const second = [settle(commit.submit(2)), settle(commit.submit(3))];
    const dropped = new Error('connection closed');
    script.release(() => {
      throw dropped;
    });
    assert.deepEqual(await first, { error: dropped });
    await tick();
    script.release();
    assert.deepEqual(await Promise.all(second), [{ value: 'done 2' }, { value: 'done 3' }]);
  });

  it('fails the batch when the flush answers the wrong number of outcomes (never a silent success)', async () => {
    const script = scriptedFlush<number>();
    const commit = new GroupCommit(script.flush);
    const calls = [1, 2].map((n) => settle(commit.submit(n)));
    await tick();
    script.release(() => [{ ok: true, value: 'only one' }]);
    for (const outcome of await Promise.all(calls)) {
      assert.ok('error' in outcome);
      assert.match((outcome.error as Error).message, /1 outcomes for a batch of 2/);
    }
  });

  it('starts afresh after going idle', async () => {
    const script = scriptedFlush<number>();
    const commit = new GroupCommit(script.flush);
    const a = commit.submit(1);
    await tick();
    script.release();
    await a;
    await tick();
    const b = commit.submit(2);
    await tick();
    assert.deepEqual(script.batches, [[1], [2]]);
    script.release();
    assert.equal(await b, 'done 2');
  });

  it('refuses a batch bound that is not a positive integer', () => {
    assert.throws(() => new GroupCommit(async () => [], 0), RangeError);
    assert.throws(() => new GroupCommit(async () => [], 1.5), RangeError);
  });
});
