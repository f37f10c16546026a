/** The provider-call scheduler (D36): round-robin between accounts, priority within one, caps, and leaving the queue on cancel. */
import assert from 'node:assert/strict';
import { CallScheduler } from '../../activities/call-scheduler';
import { adjust } from '../../activities/load-governor';
import type { RunPriority } from '../../domain/run-priority';

/** A call that runs until `finish()` is called; `order` records when each call got its slot. */
function harness(slots: number, caps: Record<string, number> = {}) {
  const scheduler = new CallScheduler({ slots, capOf: (a) => caps[a] ?? 100 });
  const order: string[] = [];
  const finishers = new Map<string, () => void>();
  const call = (
    name: string,
    accountId: string,
    priority: RunPriority = 'normal',
    signal?: AbortSignal,
  ) =>
    scheduler.run(
      { accountId, priority },
      () =>
        new Promise<void>((resolve) => {
          order.push(name);
          finishers.set(name, resolve);
        }),
      signal,
    );
  const finish = async (name: string) => {
    finishers.get(name)!();
    await new Promise((r) => setImmediate(r));
  };
  return { scheduler, order, call, finish };
}

describe('CallScheduler (D36)', () => {
  it('hands free slots to waiting accounts in turn, not in arrival order', async () => {
    const h = harness(1);
    const all = [
      h.call('a1', 'A'),
      h.call('a2', 'A'),
      h.call('a3', 'A'),
      h.call('b1', 'B'),
      h.call('c1', 'C'),
    ];
    for (let i = 0; i < all.length; i++) {
      await new Promise((r) => setImmediate(r));
      await h.finish(h.order.at(-1)!);
    }
    await Promise.all(all);
    assert.deepEqual(h.order, ['a1', 'b1', 'c1', 'a2', 'a3']);
  });

  it('takes one account’s waiting calls high before normal before low, each in arrival order', async () => {
    const h = harness(1);
    const all = [
      h.call('first', 'A'),
      h.call('low1', 'A', 'low'),
      h.call('normal1', 'A'),
      h.call('low2', 'A', 'low'),
      h.call('high1', 'A', 'high'),
      h.call('high2', 'A', 'high'),
    ];
    for (let i = 0; i < all.length; i++) {
      await new Promise((r) => setImmediate(r));
      await h.finish(h.order.at(-1)!);
    }
    await Promise.all(all);
    assert.deepEqual(h.order, ['first', 'high1', 'high2', 'normal1', 'low1', 'low2']);
  });

  it('keeps an account at its cap while others use the free slots', async () => {
    const h = harness(4, { A: 1 });
    const all = [h.call('a1', 'A'), h.call('a2', 'A'), h.call('b1', 'B'), h.call('b2', 'B')];
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(h.order, ['a1', 'b1', 'b2']);
    assert.equal(h.scheduler.active('A'), 1);
    assert.equal(h.scheduler.waiting('A'), 1);
    await h.finish('a1');
    assert.deepEqual(h.order, ['a1', 'b1', 'b2', 'a2']);
    for (const n of ['b1', 'b2', 'a2']) await h.finish(n);
    await Promise.all(all);
    assert.equal(h.scheduler.active(), 0);
  });

  it('drops a cancelled waiter from the queue with the signal’s reason, and its slot goes on', async () => {
    const h = harness(1);
    const abort = new AbortController();
    const first = h.call('a1', 'A');
    const cancelled = h.call('a2', 'A', 'normal', abort.signal);
    const other = h.call('b1', 'B');
    abort.abort(new Error('run cancelled'));
    await assert.rejects(cancelled, /run cancelled/);
    assert.equal(h.scheduler.waiting(), 1);
    await h.finish('a1');
    await h.finish('b1');
    await Promise.all([first, other]);
    assert.deepEqual(h.order, ['a1', 'b1']);
    assert.equal(h.scheduler.waiting(), 0);
  });

  it('shrinks the slots while the event loop lags with them in use, and gives them back once it does not', async () => {
    const h = harness(20);
    const calls = Array.from({ length: 30 }, (_, i) => h.call(`a${i}`, 'A'));
    await new Promise((r) => setImmediate(r));
    assert.equal(h.scheduler.active(), 20);
    adjust(h.scheduler, 200, { lagTargetMs: 40 });
    assert.equal(h.scheduler.currentLimit, 14);
    // No new slot is handed out while over the limit: the calls that end are not replaced.
    for (const name of ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6']) await h.finish(name);
    assert.equal(h.scheduler.active(), 14);
    adjust(h.scheduler, 5, { lagTargetMs: 40 });
    assert.equal(h.scheduler.currentLimit, 18);
    assert.equal(h.scheduler.active(), 18);
    adjust(h.scheduler, 30, { lagTargetMs: 40 }); // between half the target and the target: unchanged
    assert.equal(h.scheduler.currentLimit, 18);
    for (let i = 7; i < 30; i++) await h.finish(`a${i}`);
    await Promise.all(calls);
  });

  it('holds one account’s calls to the looser lag target, and to the stricter one once another account’s calls share the worker', async () => {
    const h = harness(20);
    const targets = { lagTargetMs: 40, sharedLagTargetMs: 15 };
    const alone = Array.from({ length: 20 }, (_, i) => h.call(`a${i}`, 'A'));
    await new Promise((r) => setImmediate(r));
    assert.equal(h.scheduler.busyAccounts, 1);
    adjust(h.scheduler, 25, targets); // over the shared target, under the one-account target
    assert.equal(h.scheduler.currentLimit, 20);
    const other = h.call('b0', 'B'); // waits: every slot is in use
    await new Promise((r) => setImmediate(r));
    assert.equal(h.scheduler.busyAccounts, 2);
    adjust(h.scheduler, 25, targets);
    assert.equal(h.scheduler.currentLimit, 14);
    // Under half the shared target the slots come back, as with one account.
    adjust(h.scheduler, 5, targets);
    assert.equal(h.scheduler.currentLimit, 18);
    for (let i = 0; i < 20; i++) await h.finish(`a${i}`);
    await h.finish('b0');
    await Promise.all([...alone, other]);
    assert.equal(h.scheduler.busyAccounts, 0);
    // Back to one account: its target is the looser one again.
    const again = h.call('a20', 'A');
    await new Promise((r) => setImmediate(r));
    adjust(h.scheduler, 25, targets);
    assert.equal(h.scheduler.currentLimit, 18);
    await h.finish('a20');
    await again;
  });
});
