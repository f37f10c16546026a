// Issue 6 item 9: retention (D29). Runs with their event logs, idempotency keys, webhook
// deliveries and files older than the retention are removed by an hourly Temporal Schedule's
// activity; reads after that are 404. Ledger entries stay.
import assert from 'node:assert/strict';
import { createRetentionActivity } from '../../activities/retention';
import { ensureRetentionSchedule, retentionScheduleId } from '../../api/temporal/retention-schedule';
import { storeBytes } from '../../store/files';
import { RETENTION_WORKFLOW_TYPE } from '../../workflows/definitions';
import { startService, type TestService, temporalClient } from '../support/service';
import { newAccount } from '../support/accounts';
import { expectError } from '../support/api-assert';
import { greetingWorkflow, publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { openSse } from '../support/sse';

const ONE_MS_IN_DAYS = 1 / 86_400_000;

describe('retention (D29)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let key: string;
  let accountId: string;

  before(async () => {
    svc = await startService({ env: { FINISHED_RUN_CACHE_MS: '0' } }); // reads right after removal must see it gone, not a cached copy
    ({ key, accountId } = await newAccount(svc.store.collections));
    await publish(svc.url, key, greetingWorkflow('kept'));
  });
  after(async () => svc?.close());

  const retention = (days: number) => createRetentionActivity({ collections: svc.store.collections, db: svc.store.db, config: { retention: { days } } });
  const finalized = (runId: string) =>
    waitFor(async () => ((await svc.store.collections.runs.findOne({ _id: runId }))?.finalized ? true : undefined), { what: `run ${runId} finalized` });

  it('is scheduled hourly by a Temporal Schedule, created idempotently at API start', async () => {
    const client = temporalClient(svc);
    const scheduleId = retentionScheduleId(svc.config.temporal.taskQueue);
    assert.equal(retentionScheduleId('wrs-runs'), 'wrs-retention');
    assert.equal(await ensureRetentionSchedule(client, svc.config.temporal.taskQueue), scheduleId); // a second start finds it
    const schedule = await client.schedule.getHandle(scheduleId).describe();
    assert.equal(schedule.action.type, 'startWorkflow');
    assert.equal(schedule.action.workflowType, RETENTION_WORKFLOW_TYPE);
    assert.equal(schedule.action.taskQueue, svc.config.temporal.taskQueue);
    assert.deepEqual(schedule.spec.intervals?.map((i) => i.every), [3_600_000]);
    assert.equal(svc.config.retention.days, 30); // the default
  });

  it('the scheduled workflow runs the retention activity on a worker (nothing is old enough here)', async () => {
    const result = await temporalClient(svc).workflow.execute(RETENTION_WORKFLOW_TYPE, {
      taskQueue: svc.config.temporal.taskQueue,
      workflowId: `retention-test-${Date.now()}`,
      args: [],
    });
    assert.deepEqual(result, { runs: 0, idempotencyKeys: 0, webhookDeliveries: 0, files: 0 });
  });

  it('removes finalized runs, their event logs, idempotency keys and files past the retention; reads are 404; ledger entries stay', async () => {
    const async = await call(svc.url, 'POST', '/api/v1/responses', { key, body: { workflowId: 'kept', inputs: { name: 'Old' } }, headers: { 'idempotency-key': 'old-run' } });
    assert.equal(async.status, 202);
    const runId = async.body.run_id;
    await waitForRun(svc.url, key, runId);
    await finalized(runId);
    const file = await storeBytes(svc.store.db, Buffer.from('old bytes'), { accountId, name: 'old.txt', maxBytes: 1_000, source: 'upload' });
    assert.equal((await call(svc.url, 'GET', `/api/v1/files/${file._id}`, { key })).status, 200);

    // Within the retention (30 days): nothing goes.
    assert.equal((await retention(30)()).runs, 0);
    assert.equal((await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key })).status, 200);

    // A run still going (no worker yet) is never removed, however old.
    await svc.stopWorker();
    let pendingId: string;
    try {
      const pending = await call(svc.url, 'POST', '/api/v1/responses', { key, body: { workflowId: 'kept', inputs: { name: 'Live' } } });
      pendingId = pending.body.run_id;
      await new Promise((r) => setTimeout(r, 5));
      const removed = await retention(ONE_MS_IN_DAYS)();
      assert.ok(removed.runs >= 1, JSON.stringify(removed));
      assert.ok(removed.idempotencyKeys >= 1, JSON.stringify(removed));
      assert.ok(removed.files >= 1, JSON.stringify(removed));
      assert.equal((await call(svc.url, 'GET', `/api/v1/runs/${pendingId}`, { key })).status, 200);
    } finally {
      await svc.startWorker();
    }

    expectError(await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key }), { status: 404, type: 'not_found_error' });
    const stream = await openSse(`${svc.url}/api/v1/runs/${runId}/stream`, { key });
    assert.equal(stream.status, 404);
    assert.equal(stream.json.error.type, 'not_found_error');
    const list = await call(svc.url, 'GET', '/api/v1/runs?limit=100', { key });
    assert.equal(list.status, 200);
    assert.ok(!JSON.stringify(list.body).includes(runId), 'a removed run is not listed');
    expectError(await call(svc.url, 'GET', `/api/v1/files/${file._id}`, { key }), { status: 404, type: 'not_found_error' });
    assert.equal(await svc.store.collections.runs.countDocuments({ _id: runId }), 0);
    assert.equal(await svc.store.collections.idempotencyKeys.countDocuments({ run_id: runId }), 0);
    // Money history is not user data: the run's debit stays and still explains the balance.
    const debits = await svc.store.collections.ledger.find({ run_id: runId }).toArray();
    assert.equal(debits.length, 1);
    assert.ok(debits[0].amount_usd < 0);

    // The same Idempotency-Key now starts afresh: the key went with its run (D18).
    const again = await call(svc.url, 'POST', '/api/v1/responses', { key, body: { workflowId: 'kept', inputs: { name: 'Old' } }, headers: { 'idempotency-key': 'old-run' } });
    assert.equal(again.status, 202);
    assert.notEqual(again.body.run_id, runId);
    await waitForRun(svc.url, key, again.body.run_id);
    await waitForRun(svc.url, key, pendingId!);
  });
});
