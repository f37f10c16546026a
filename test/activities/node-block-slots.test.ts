/**
 * The worker's block slots (activities/node-block.ts, WORKER_BLOCKS): a block holds the items of
 * its unwritten pages, so a worker runs a bounded number of blocks at once. Run in Temporal's
 * activity test environment against a real database (FerretDB): a block past the slots waits,
 * heartbeating, and runs once one is free; a run's cancel while it waits answers at once with
 * nothing run and nothing billed.
 */
import assert from 'node:assert/strict';
import { CallScheduler } from '../../activities/call-scheduler';
import { createNodeBlockActivity } from '../../activities/node-block';
import type { RowExecutors } from '../../activities/node-chunk';
import type { NodeBlockRequest, NodeBlockResult } from '../../activities/types';
import { completed } from '../../domain/items';
import { generateId } from '../../store/ids';
import { waitFor } from '../support/http';
import { useTestStore } from '../support/store';
import { activityEnv, llmBlock } from '../support/activity-env';

describe('block slots: a worker runs a bounded number of blocks at once (D35)', function () {
  this.timeout(60_000);
  const db = useTestStore();

  /** An llm executor whose calls wait for `open()`; `calls` counts them by run. */
  function gatedExecutors() {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const calls = new Map<string, number>();
    const executors = {
      llm: async (req: { runId: string; iteration: number }) => {
        calls.set(req.runId, (calls.get(req.runId) ?? 0) + 1);
        await gate;
        return {
          items: [completed({ type: 'text', text: `answer ${req.iteration}` })],
          costUsd: 0.5,
        };
      },
    } as unknown as RowExecutors;
    return { executors, calls, open };
  }

  const block = (runId: string, accountId: string): NodeBlockRequest =>
    llmBlock(runId, { accountId, rows: 100, concurrency: 4 });

  /** One slot, held by a first block whose calls wait; the second block's run id and the gate. */
  async function slotHeld() {
    const { executors, calls, open } = gatedExecutors();
    const slots = new CallScheduler({ slots: 1, capOf: () => Infinity });
    const run = createNodeBlockActivity(executors, db.store.collections, slots);
    const [first, second] = [generateId('run'), generateId('run')];
    const running = activityEnv().run(run, block(first, 'acct_a')) as Promise<NodeBlockResult>;
    await waitFor(async () => calls.get(first) === 4 || undefined, {
      what: 'the first block runs',
    });
    return { run, calls, open, second, running };
  }

  it('runs a block past the slots once one is free, heartbeating while it waits', async () => {
    const { run, calls, open, second, running } = await slotHeld();
    const waitingEnv = activityEnv();
    let beats = 0;
    waitingEnv.on('heartbeat', () => beats++);
    const waiting = waitingEnv.run(run, block(second, 'acct_b')) as Promise<NodeBlockResult>;
    await waitFor(async () => beats >= 2 || undefined, { what: 'the waiting block heartbeats' });
    assert.equal(calls.get(second), undefined, 'the second block has not started');
    open();
    for (const result of await Promise.all([running, waiting])) {
      assert.equal(result.done, 100);
      assert.equal(result.costUsd, 50);
    }
    assert.equal(calls.get(second), 100);
  });

  it("answers a run's cancel while waiting at once: nothing ran, nothing billed", async () => {
    const { run, calls, open, second, running } = await slotHeld();
    const waitingEnv = activityEnv();
    waitingEnv.on('heartbeat', () => waitingEnv.cancel());
    const cancelled = (await waitingEnv.run(run, block(second, 'acct_b'))) as NodeBlockResult;
    assert.deepEqual(cancelled, {
      done: 0,
      ranges: [],
      costUsd: 0,
      usage: { calls: 0, input_tokens: 0, output_tokens: 0, completed: 0, failed: 0 },
      failed: [],
      cancelled: true,
    });
    assert.equal(calls.get(second), undefined);
    open();
    assert.equal((await running).done, 100);
  });
});
