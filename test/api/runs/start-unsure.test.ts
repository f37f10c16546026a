/**
 * A start Temporal took but never answered (D18, api/temporal/run-gateway.ts RunStartUnsureError):
 * the API cannot tell it from one that never arrived, so it keeps the run's record and hold and
 * says so. Before, it removed the record and gave the hold back while the workflow ran on: the
 * run's end gave the same hold back a second time, and the run was billed unseen. So does a start
 * whose record's write the store never answered.
 */
import assert from 'node:assert/strict';
import { startApiProcess, type ApiProcess } from '../../support/api-process';
import { expectError } from '../../support/api-assert';
import { startAnswerHoldProxy, type AnswerHoldProxy } from '../../support/answer-hold-proxy';
import { greetingWorkflow, publish, rowsWorkflow, waitForRun } from '../../support/fixtures';
import { hasStringElement, startMongoProxy } from '../../support/mongo-proxy';
import { call } from '../../support/http';
import { useService } from '../../support/use-service';

describe('a run start whose answer from Temporal never came', function () {
  this.timeout(120_000);
  const env = {
    PRICES: JSON.stringify({ 'gpt-test': { input_per_mtok: 10, output_per_mtok: 20 } }),
  };
  const ctx = useService({ account: false, fakeOpenAI: true, env });
  let proxy: AnswerHoldProxy;
  let api: ApiProcess;

  before(async () => {
    proxy = await startAnswerHoldProxy(ctx.svc.config.temporal.address);
    // This API reaches Temporal through the proxy, with short deadlines; the block's worker does not.
    api = await startApiProcess(ctx.svc.config, {
      env: {
        TEMPORAL_ADDRESS: proxy.address,
        TEMPORAL_RPC_TIMEOUT_MS: '1500',
        QUERY_TIMEOUT_MS: '1000',
        ...env,
      },
    });
  });
  after(async () => {
    await api?.kill();
    await proxy?.close();
  });

  it('keeps the run and its hold: the run ends as usual, its hold is given back once, a retry answers with it', async () => {
    const { accountId, key } = await ctx.newAccount(1);
    await publish(api.url, key, rowsWorkflow('unanswered', '{{row}}'));
    // Its one call is held until the start has been answered: the run is still running then.
    const body = { workflowId: 'unanswered', inputs: { rows: ['held hold:unanswered'] } };
    const headers = { 'Idempotency-Key': 'unanswered-start' };

    proxy.holdAnswers();
    const res = await call(api.url, 'POST', '/api/v1/responses', { key, body, headers });
    proxy.release();
    ctx.fake.release('unanswered');
    expectError(res, { status: 503, type: 'server_error', code: 'service_unavailable' });
    const runId = /run_\w+/.exec(res.body.error.message)?.[0];
    assert.ok(runId, res.body.error.message);

    // The workflow did start: it runs on the block's worker and ends the run it finds recorded.
    const run = await waitForRun(api.url, key, runId);
    assert.equal(run.status, 'completed');
    const c = ctx.svc.store.collections;
    const record = await c.runs.findOne({ _id: runId });
    assert.ok(record?.hold_usd && record.hold_usd > 0, 'the run held credit');
    const entries = await c.ledger.find({ account_id: accountId, run_id: runId }).toArray();
    assert.deepEqual(
      entries.map((e) => [e.kind, e.released_usd]),
      [['run', record.hold_usd]],
      'one entry gives the hold back: the run’s debit',
    );

    // The key still names the run: a retry answers with it, starting nothing more.
    const again = await call(api.url, 'POST', '/api/v1/responses', { key, body, headers });
    assert.equal(again.body.run_id, runId, JSON.stringify(again.body));
    assert.equal(await c.runs.countDocuments({ account_id: accountId }), 1);
  });
});

describe("a run start whose record's write the store never answered", function () {
  this.timeout(120_000);
  const ctx = useService({ account: false });

  it('answers 503 and keeps the key: a retry with it starts that one run (before: 500, the key released, a second run)', async () => {
    const { accountId, key } = await ctx.newAccount(1);
    await publish(ctx.svc.url, key, greetingWorkflow('unrecorded'));
    // This API's store connections drop once its run record reached the store (a store restart).
    const proxy = await startMongoProxy(
      ctx.svc.config.mongo.uri,
      (m) => hasStringElement(m, 'insert', 'runs') && m.includes(accountId),
    );
    const api = await startApiProcess(ctx.svc.config, { env: { MONGODB_URI: proxy.uri } });
    try {
      const body = { workflowId: 'unrecorded', inputs: { name: 'Ida' } };
      const headers = { 'Idempotency-Key': 'unrecorded-start' };
      const answer = call(api.url, 'POST', '/api/v1/responses', { key, body, headers });
      await proxy.frozen;
      proxy.cut();
      const res = await answer;
      expectError(res, { status: 503, type: 'server_error', code: 'service_unavailable' });
      const runId = /run_\w+/.exec(res.body.error.message)?.[0];
      assert.ok(runId, res.body.error.message);

      // The retry (here on another API process) finds the recorded run and starts it, once its
      // first request's claim is stale: the same run, no second one.
      const again = await call(ctx.svc.url, 'POST', '/api/v1/responses', { key, body, headers });
      assert.equal(again.status, 202, JSON.stringify(again.body));
      assert.equal(again.body.run_id, runId);
      const run = await waitForRun(ctx.svc.url, key, runId);
      assert.equal(run.output.greeting[0].parts[0].text, 'Hello, Ida!');
      assert.equal(
        await ctx.svc.store.collections.runs.countDocuments({ account_id: accountId }),
        1,
      );
    } finally {
      await api.kill();
      await proxy.close();
    }
  });
});
