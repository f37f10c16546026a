/**
 * The block queue (D35, worker/create-worker.ts): a big node's blocks are scheduled on the run task
 * queue's `-blocks` queue, from which a worker takes only the blocks it runs at once
 * (WORKER_BLOCKS). A block past them waits in Temporal, scheduled and not started, holding none of
 * the activity slots every run's other work needs: a small run completes meanwhile.
 */
import assert from 'node:assert/strict';
import { temporal } from '@temporalio/proto';
import { blockTaskQueue } from '../../workflows/definitions';
import { publish, rowsWorkflow, waitForRun } from '../support/fixtures';
import { resultsFile } from '../support/files';
import { call, waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { temporalClient } from '../support/service';
import { useService } from '../support/use-service';

const { PendingActivityState } = temporal.api.enums.v1;
const ROWS = 400; // at concurrency 4: four blocks of 100 rows, two of them in flight at once
const rows = Array.from({ length: ROWS }, (_, i) => `r${i}`);

describe('block queue: blocks past the worker block slots wait in Temporal (D35)', function () {
  this.timeout(180_000);
  const ctx = useService({ fakeOpenAI: true, credit: 100, env: { WORKER_BLOCKS: '1' } });

  before(async () => {
    await publish(
      ctx.svc.url,
      ctx.key,
      rowsWorkflow('rows-blocks', 'slow:100 row {{row}}', { concurrency: 4 }),
    );
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('rows-small'));
  });

  const start = (slug: string, list: unknown[]) =>
    startRun(ctx.svc.url, ctx.key, slug, { rows: list });

  /** Waits until the run has two blocks pending: one started on the worker's one slot, the other still in Temporal's queue. */
  const oneStartedOneScheduled = async (runId: string) => {
    const handle = temporalClient(ctx.svc).workflow.getHandle(runId);
    const pending = await waitFor(
      async () => {
        const { raw } = await handle.describe();
        const blocks = (raw.pendingActivities ?? []).filter(
          (a) => a.activityType?.name === 'runNodeBlock',
        );
        const states = blocks.map((a) => Number(a.state)).sort();
        return states.length === 2 && states[0] !== states[1] ? states : undefined;
      },
      { what: 'one block started and one scheduled', timeoutMs: 60_000 },
    );
    assert.deepEqual(pending, [
      PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
      PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
    ]);
  };

  it('runs one block at a time with the next one scheduled in Temporal, while a small run completes', async () => {
    const runId = await start('rows-blocks', rows);
    const handle = temporalClient(ctx.svc).workflow.getHandle(runId);
    const queue = blockTaskQueue(ctx.svc.config.temporal.taskQueue);

    await oneStartedOneScheduled(runId);

    // The run task queue's activity slots are free for everyone else's work meanwhile.
    const small = await waitForRun(ctx.svc.url, ctx.key, await start('rows-small', ['a', 'b']));
    assert.equal(small.status, 'completed');
    assert.equal((await handle.describe()).status.name, 'RUNNING', 'the big run is still running');

    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 150_000);
    assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));
    assert.equal(run.output.answers.length, ROWS);
    run.output.answers.forEach((item: any, i: number) =>
      assert.equal(item.parts[0].text, `echo: slow:100 row r${i}`),
    );

    // Every block was scheduled on the block queue.
    const history = await handle.fetchHistory();
    const scheduled = (history.events ?? []).flatMap((e) => {
      const a = e.activityTaskScheduledEventAttributes;
      return a?.activityType?.name === 'runNodeBlock' ? [a.taskQueue?.name] : [];
    });
    assert.deepEqual(scheduled, [queue, queue, queue, queue]);
  });

  it('cancels a block still in the queue at once: it never runs, the rows that finished stay billed', async () => {
    const before = ctx.fake.requests.length;
    const runId = await start('rows-blocks', rows);
    await oneStartedOneScheduled(runId);
    const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
      key: ctx.key,
    });
    assert.equal(cancel.status, 202);
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 30_000);
    assert.equal(run.status, 'cancelled');
    // One block ran (either of the two may be taken first); the queued one never reached the provider.
    const blockOf = (prompt: string) => Math.floor(Number(/row r(\d+)$/.exec(prompt)![1]) / 100);
    const calls = ctx.fake.requests.slice(before);
    assert.ok(calls.length > 0, 'the started block called the provider');
    const ran = [...new Set(calls.map((r) => blockOf(r.prompt)))];
    assert.equal(ran.length, 1, `rows of blocks ${ran.join(', ')} were called`);
    // What the started block finished stays readable, and is what the run counts.
    const finished = await resultsFile(ctx.svc.url, ctx.key, runId, 'answers');
    assert.ok(finished.length > 0, 'the started block finished rows before the cancel');
    for (const item of finished) assert.equal(Math.floor(item.item_index / 100), ran[0]);
    assert.equal(run.usage.by_node.ask.items_completed, finished.length);
  });
});
