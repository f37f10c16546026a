/**
 * A small run's end (D7, workflows/run-workflow.ts saveEndLocally): written by a local activity in
 * the workflow task that ends the run; when the store refuses it for longer than the six local
 * attempts (~12 s), the ordinary finalize activity takes over, and the run is still finalized and
 * debited once. A run somebody waits for (D28) answers first and writes its end as the activity.
 */
import assert from 'node:assert/strict';
import { temporal } from '@temporalio/proto';
import { publish, greetingWorkflow } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { countingCalls } from '../support/counting';
import { bookedDebit, finalizedRecord, startRun } from '../support/runs';
import { startInProcessWorker, type InProcessWorker } from '../support/backend';
import { temporalClient } from '../support/service';
import { useService } from '../support/use-service';

const { EventType } = temporal.api.enums.v1;

describe("workflows: a run's end", function () {
  this.timeout(90_000);
  const ctx = useService({ worker: false });
  const history = async (runId: string) =>
    (await temporalClient(ctx.svc).workflow.getHandle(runId).fetchHistory()).events ?? [];
  const finalizeActivities = async (runId: string) =>
    (await history(runId)).filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'finalizeRun',
    );

  before(() => publish(ctx.svc.url, ctx.key, greetingWorkflow('ends')));

  it('is a local activity; past six failed local attempts the ordinary activity writes it, once', async () => {
    const { svc } = ctx;
    const c = svc.store.collections;
    // The worker's debits go out as group-committed bulk writes (store/run-writes.ts).
    const { collection: ledger, probe } = countingCalls(c.ledger, 'bulkWrite');
    let worker: InProcessWorker | undefined;
    try {
      worker = await startInProcessWorker(svc.config, {
        ...svc.store,
        collections: { ...c, ledger },
      });
      const markers = async (runId: string) =>
        (await history(runId)).filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED);

      // The store answers: one marker, no activity task.
      const quick = await startRun(svc.url, ctx.key, 'ends', { name: 'Ada' });
      await temporalClient(svc).workflow.getHandle(quick).result();
      assert.equal((await finalizedRecord(c, quick)).status, 'completed');
      assert.deepEqual(await finalizeActivities(quick), []);
      assert.equal((await markers(quick)).length, 2, 'the patch and the local finalize');

      // The store refuses the debit: the local attempts give up after ~12 s, the activity waits it out.
      probe.fail = new Error('the store is down (test)');
      const slow = await startRun(svc.url, ctx.key, 'ends', { name: 'Bo' });
      await waitFor(async () => ((await finalizeActivities(slow)).length ? true : undefined), {
        timeoutMs: 40_000,
        intervalMs: 500,
        what: 'the finalize activity after the local attempts',
      });
      probe.fail = null;
      await temporalClient(svc).workflow.getHandle(slow).result();
      const record = await finalizedRecord(c, slow);
      assert.equal(record.status, 'completed');
      const debit = await bookedDebit(c, slow);
      assert.equal(debit.amount_usd, -record.total_cost!);
      assert.equal(debit.run_ended_at?.getTime(), record.completed_at?.getTime());
      assert.equal(await c.ledger.countDocuments({ run_id: slow }), 1);
    } finally {
      probe.fail = null;
      await worker?.stop();
    }
  });

  it('of a run somebody waits for (Prefer: wait) is the activity, after the task that ends the run answered', async () => {
    const { svc } = ctx;
    await svc.startWorker();
    try {
      const res = await call(svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        headers: { Prefer: 'wait=30' },
        body: { workflowId: 'ends', inputs: { name: 'Cy' } },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.output.greeting[0].parts[0].text, 'Hello, Cy!');
      const runId = res.body.id;
      await temporalClient(svc).workflow.getHandle(runId).result();
      const types = (await history(runId)).map((e) => e.eventType);
      // The start carried the update (api/temporal/run-gateway.ts startAwaited): the first workflow
      // task accepted and answered it, and scheduled the end's activity; a second task closed the run.
      const secondTask = types.indexOf(EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, 2);
      const answered = types.indexOf(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED);
      assert.ok(
        types.indexOf(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) > 0 &&
          answered > 0 &&
          answered < secondTask,
        `the update answered by the first workflow task: ${types.join(' ')}`,
      );
      assert.equal((await finalizeActivities(runId)).length, 1);
      assert.equal((await finalizedRecord(svc.store.collections, runId)).status, 'completed');
    } finally {
      await svc.stopWorker();
    }
  });
});
