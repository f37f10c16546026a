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
import { call, waitFor } from '../support/http';
import { temporalClient } from '../support/service';
import { useService } from '../support/use-service';

const { PendingActivityState } = temporal.api.enums.v1;
const ROWS = 400; // at concurrency 4: four blocks of 100 rows, two of them in flight at once

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

  const start = async (slug: string, rows: unknown[]) => {
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: slug, inputs: { rows } },
    });
    assert.equal(res.status, 202, JSON.stringify(res.body).slice(0, 500));
    return res.body.run_id as string;
  };

  it('runs one block at a time with the next one scheduled in Temporal, while a small run completes', async () => {
    const rows = Array.from({ length: ROWS }, (_, i) => `r${i}`);
    const runId = await start('rows-blocks', rows);
    const handle = temporalClient(ctx.svc).workflow.getHandle(runId);
    const queue = blockTaskQueue(ctx.svc.config.temporal.taskQueue);

    // Two blocks in flight: one started on the worker's one slot, the other still in Temporal's queue.
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
});
