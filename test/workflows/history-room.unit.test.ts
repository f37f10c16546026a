/**
 * The history's room for inline answers (workflows/history-room.ts): chunks hold their worst case
 * while in flight, so the answers of chunks started together cannot pass the limit together; one
 * that does not fit waits for those in flight, and with none in flight is refused.
 */
import assert from 'node:assert/strict';
import { HistoryRoom } from '../../workflows/history-room';

/** A room of `limit` bytes over a history and an output that the test grows by hand. */
function roomOf(limit: number) {
  const sizes = { history: 0, end: 0 };
  const room = new HistoryRoom(limit, {
    historyBytes: () => sizes.history,
    endBytes: () => sizes.end,
  });
  return { room, sizes };
}

const settled = async <T>(promise: Promise<T>): Promise<boolean> => {
  let done = false;
  void promise.then(() => (done = true));
  for (let i = 0; i < 10; i++) await Promise.resolve();
  return done;
};

describe('history room: what chunks in flight may answer', () => {
  it('lets chunks start while their worst cases fit beside the history and the output, then waits', async () => {
    const { room, sizes } = roomOf(1_000);
    sizes.history = 200;
    sizes.end = 100;
    // The patch is asked only when a chunk does not fit: other runs record no marker.
    const unasked = () => assert.fail('asked though it fits');
    const first = await room.take(300, unasked);
    const second = await room.take(300, unasked);
    assert.ok(first && second, '200 + 100 + 600 fit 1,000');
    const third = room.take(300, () => true);
    assert.equal(await settled(third), false, 'a third waits for those in flight');
    // The first answered 50 bytes, its output counted for the end: its worst case gives way to them.
    sizes.history += 50;
    sizes.end += 50;
    first();
    assert.ok(await third, 'then fits: 250 + 150 + 600');
  });

  it('refuses a chunk that does not fit with nothing in flight (nothing could make room)', async () => {
    const { room, sizes } = roomOf(1_000);
    sizes.history = 900;
    assert.equal(await room.take(200, () => true), undefined);
    const waiting = (async () => {
      sizes.history = 500;
      const held = await room.take(400, () => true);
      const next = room.take(400, () => true);
      sizes.history = 900; // the first's answer was its whole worst case
      held!();
      return next;
    })();
    assert.equal(await waiting, undefined, 'a waiter that finds nothing in flight is refused');
  });

  it('holds without waiting or refusing for a run started before the patch', async () => {
    const { room, sizes } = roomOf(1_000);
    sizes.history = 900;
    let asked = 0;
    const old = () => (asked++, false);
    assert.ok(await room.take(200, old));
    assert.ok(await room.take(200, old));
    assert.equal(asked, 2);
  });
});
