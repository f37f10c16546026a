// Retention (D29). Runs with their event logs, idempotency keys, webhook
// deliveries and files older than the retention are removed by an hourly Temporal Schedule's
// activity; reads after that are 404. Ledger entries stay.
import assert from 'node:assert/strict';
import { createRetentionActivity } from '../../../activities/retention';
import {
  ensureRetentionSchedule,
  retentionScheduleId,
} from '../../../api/temporal/retention-schedule';
import { storeBytes } from '../../../store/files';
import { RETENTION_WORKFLOW_TYPE } from '../../../workflows/definitions';
import { temporalClient } from '../../support/service';
import { expectError } from '../../support/api-assert';
import { greetingWorkflow, publish, waitForRun } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { openSse } from '../../support/sse';
import { useService } from '../../support/use-service';

const ONE_MS_IN_DAYS = 1 / 86_400_000;

describe('retention (D29)', function () {
  this.timeout(60_000);
  const ctx = useService({ env: { FINISHED_RUN_CACHE_MS: '0' } }); // reads right after removal must see it gone, not a cached copy

  before(async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('kept'));
  });

  const retention = (days: number) =>
    createRetentionActivity({
      collections: ctx.svc.store.collections,
      db: ctx.svc.store.db,
      config: { retention: { days } },
    });
  const finalized = (runId: string) =>
    waitFor(
      async () =>
        (await ctx.svc.store.collections.runs.findOne({ _id: runId }))?.finalized
          ? true
          : undefined,
      { what: `run ${runId} finalized` },
    );

  it('is scheduled hourly by a Temporal Schedule, created idempotently at API start', async () => {
    const client = temporalClient(ctx.svc);
    const scheduleId = retentionScheduleId(ctx.svc.config.temporal.taskQueue);
    assert.equal(retentionScheduleId('wrs-runs'), 'wrs-retention');
    assert.equal(
      await ensureRetentionSchedule(client, ctx.svc.config.temporal.taskQueue),
      scheduleId,
    ); // a second start finds it
    const schedule = await client.schedule.getHandle(scheduleId).describe();
    assert.equal(schedule.action.type, 'startWorkflow');
    assert.equal(schedule.action.workflowType, RETENTION_WORKFLOW_TYPE);
    assert.equal(schedule.action.taskQueue, ctx.svc.config.temporal.taskQueue);
    assert.deepEqual(
      schedule.spec.intervals?.map((i) => i.every),
      [3_600_000],
    );
    assert.equal(ctx.svc.config.retention.days, 30); // the default
  });

  it('the scheduled workflow runs the retention activity and the sweep of held credit on a worker (nothing is old enough here)', async () => {
    const result = await temporalClient(ctx.svc).workflow.execute(RETENTION_WORKFLOW_TYPE, {
      taskQueue: ctx.svc.config.temporal.taskQueue,
      workflowId: `retention-test-${Date.now()}`,
      args: [],
    });
    assert.deepEqual(result, {
      runs: 0,
      idempotencyKeys: 0,
      webhookDeliveries: 0,
      files: 0,
      unfinishedUploads: 0,
      // Runs recorded and never started, which other tests of this process may leave
      // (test/api/runs/settle-never-started.test.ts).
      unstarted: result.unstarted,
      // D17: and the sweep of credit held for no run (test/store/hold-sweep.test.ts).
      holds: { accounts: 0, releases: 0, releasedUsd: 0 },
    });
    assert.equal(typeof result.unstarted, 'number');
  });

  it('removes finalized runs, their event logs, idempotency keys and files past the retention; reads are 404; ledger entries stay', async () => {
    const async = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'kept', inputs: { name: 'Old' } },
      headers: { 'idempotency-key': 'old-run' },
    });
    assert.equal(async.status, 202);
    const runId = async.body.run_id;
    await waitForRun(ctx.svc.url, ctx.key, runId);
    await finalized(runId);
    const file = await storeBytes(ctx.svc.store.db, Buffer.from('old bytes'), {
      accountId: ctx.accountId,
      name: 'old.txt',
      maxBytes: 1_000,
      source: 'upload',
    });
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/files/${file._id}`, { key: ctx.key })).status,
      200,
    );

    // Within the retention (30 days): nothing goes.
    assert.equal((await retention(30)()).runs, 0);
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key })).status,
      200,
    );

    // A run still going (no worker yet) is never removed, however old.
    await ctx.svc.stopWorker();
    let pendingId: string;
    try {
      const pending = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'kept', inputs: { name: 'Live' } },
      });
      pendingId = pending.body.run_id;
      await new Promise((r) => setTimeout(r, 5));
      const removed = await retention(ONE_MS_IN_DAYS)();
      assert.ok(removed.runs >= 1, JSON.stringify(removed));
      assert.ok(removed.idempotencyKeys >= 1, JSON.stringify(removed));
      assert.ok(removed.files >= 1, JSON.stringify(removed));
      assert.equal(
        (await call(ctx.svc.url, 'GET', `/api/v1/runs/${pendingId}`, { key: ctx.key })).status,
        200,
      );
    } finally {
      await ctx.svc.startWorker();
    }

    expectError(await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key }), {
      status: 404,
      type: 'not_found_error',
    });
    const stream = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream`, { key: ctx.key });
    assert.equal(stream.status, 404);
    assert.equal(stream.json.error.type, 'not_found_error');
    const list = await call(ctx.svc.url, 'GET', '/api/v1/runs?limit=100', { key: ctx.key });
    assert.equal(list.status, 200);
    assert.ok(!JSON.stringify(list.body).includes(runId), 'a removed run is not listed');
    expectError(await call(ctx.svc.url, 'GET', `/api/v1/files/${file._id}`, { key: ctx.key }), {
      status: 404,
      type: 'not_found_error',
    });
    assert.equal(await ctx.svc.store.collections.runs.countDocuments({ _id: runId }), 0);
    assert.equal(
      await ctx.svc.store.collections.idempotencyKeys.countDocuments({ run_id: runId }),
      0,
    );
    // Money history is not user data: the run's debit stays and still explains the balance.
    const debits = await ctx.svc.store.collections.ledger.find({ run_id: runId }).toArray();
    assert.equal(debits.length, 1);
    assert.ok(debits[0].amount_usd < 0);

    // The same Idempotency-Key now starts afresh: the key went with its run (D18).
    const again = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'kept', inputs: { name: 'Old' } },
      headers: { 'idempotency-key': 'old-run' },
    });
    assert.equal(again.status, 202);
    assert.notEqual(again.body.run_id, runId);
    await waitForRun(ctx.svc.url, ctx.key, again.body.run_id);
    await waitForRun(ctx.svc.url, ctx.key, pendingId!);
  });
});
