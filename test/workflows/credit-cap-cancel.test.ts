/**
 * D17: a run capped at its hold asks the store for more as it works (`extendRunHold`). A cancel
 * that arrives while the store is booking such an extension waits for its answer (patch
 * `extension-awaited`), so the run's end gives back everything it held. Before, the workflow
 * abandoned the extension: booked after the run's end, it stayed held until the hourly sweep
 * found the account quiet for 15 minutes.
 */
import assert from 'node:assert/strict';
import { accountCredit } from '../../store/credit-holds';
import { publish, rowsWorkflow, waitForRun } from '../support/fixtures';
import { uploadFile } from '../support/files';
import { call, waitFor } from '../support/http';
import { hasStringElement, startMongoProxy, type MongoProxy } from '../support/mongo-proxy';
import { startRun } from '../support/runs';
import { temporalClient } from '../support/service';
import { useService } from '../support/use-service';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

const PRICES = JSON.stringify({ 'gpt-test': { input_per_mtok: 10, output_per_mtok: 20 } });
const CREDIT_ENV = { PRICES, START_FEE_USD: '0.001', CREDIT_HOLD_PER_CALL_USD: '0.002' };

describe('a run cancelled while its hold is being extended (D17)', function () {
  this.timeout(120_000);
  // The worker is a child process that reaches the store through a proxy the test freezes.
  const ctx = useService({ fakeOpenAI: true, worker: false, account: false, env: CREDIT_ENV });
  let proxy: MongoProxy | undefined;
  let worker: WorkerProcess | undefined;
  afterEach(async () => {
    await worker?.kill();
    await proxy?.close();
  });

  it('waits for the extension’s answer and gives back every hold at its end', async () => {
    const c = ctx.svc.store.collections;
    const { accountId, key } = await ctx.newAccount(10);
    await publish(
      ctx.svc.url,
      key,
      rowsWorkflow('extended', '{{row}}', { concurrency: 4, input_type: 'file' }),
    );
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify(`ext ${i}`)).join('\n');
    const file = await uploadFile(ctx.svc.url, key, 'ext.jsonl', lines);

    // The run holds one call at its start, so its first unit asks for more: the worker's store
    // connection freezes right after booking it, before the run record says so.
    proxy = await startMongoProxy(
      ctx.svc.config.mongo.uri,
      (m) => hasStringElement(m, 'insert', 'credit_holds') && m.includes(accountId),
    );
    worker = startWorkerProcess(ctx.svc.config, {
      mongoUri: proxy.uri,
      env: { ...CREDIT_ENV, OPENAI_BASE_URL: ctx.fake.baseUrl },
    });
    const runId = await startRun(ctx.svc.url, key, 'extended', { rows: file });
    await proxy.frozen;

    const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, { key });
    assert.equal(cancel.status, 202, JSON.stringify(cancel.body));
    // The workflow has taken the cancel in (a workflow task completed after it) before the store answers.
    const handle = temporalClient(ctx.svc).workflow.getHandle(runId);
    await waitFor(
      async () => {
        const events = (await handle.fetchHistory()).events ?? [];
        const asked = events.findIndex((e) => e.workflowExecutionCancelRequestedEventAttributes);
        return asked >= 0 && events.slice(asked).some((e) => e.workflowTaskCompletedEventAttributes)
          ? true
          : undefined;
      },
      { what: 'the workflow to handle the cancel' },
    );
    proxy.thaw();

    const run = await waitForRun(ctx.svc.url, key, runId, 60_000);
    assert.equal(run.status, 'cancelled');
    const record = await c.runs.findOne({ _id: runId });
    assert.ok(Object.keys(record?.hold_grants ?? {}).length >= 1, 'the hold was extended');
    const credit = await waitFor(
      async () => {
        const now = await accountCredit(c, accountId);
        return now.held_usd === 0 ? now : undefined;
      },
      { what: 'every hold to be given back', timeoutMs: 20_000 },
    );
    assert.equal(credit.available_usd, credit.balance_usd);
  });
});
