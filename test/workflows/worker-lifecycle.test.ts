/**
 * Runs and the worker's life on the real stack: pending while no worker runs (D7), completed once
 * one starts, and the full record served after Temporal forgot the run.
 */
import assert from 'node:assert/strict';
import { WorkflowNotFoundError } from '@temporalio/client';
import { temporalClient } from '../support/service';
import { useService } from '../support/use-service';
import { call, waitFor } from '../support/http';
import { greetingWorkflow, publish, waitForRun } from '../support/fixtures';
import { startRun } from '../support/runs';
import { START_FEE_USD, texts } from '../support/execution';

describe('workflow execution: worker lifecycle and Temporal retention (real Temporal + FerretDB)', function () {
  this.timeout(120_000);
  const doc = greetingWorkflow('lifecycle');
  const ctx = useService({ worker: false, account: false });

  it('answers pending quickly while no worker runs, then completes once one starts', async () => {
    const { svc } = ctx;
    const { key } = await ctx.newAccount();
    await publish(svc.url, key, doc);
    const runId = await startRun(svc.url, key, doc.slug, { name: 'Ada' });
    for (let i = 0; i < 2; i++) {
      const t0 = Date.now();
      const res = await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
      const took = Date.now() - t0;
      assert.ok(took < 5_000, `GET took ${took} ms`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.status, 'pending');
      assert.equal(res.body.output, null);
      assert.equal(res.body.completed_at, null);
    }
    await svc.startWorker();
    const run = await waitForRun(svc.url, key, runId);
    assert.equal(run.status, 'completed', JSON.stringify(run));
    assert.deepEqual(texts(run.output.greeting), ['Hello, Ada!']);
  });

  it('serves the full record after Temporal forgot the run and no worker runs', async () => {
    const { svc } = ctx;
    await svc.startWorker();
    const { key } = await ctx.newAccount();
    await publish(svc.url, key, doc);
    const runId = await startRun(svc.url, key, doc.slug, { name: 'Grace' });
    const run = await waitForRun(svc.url, key, runId);
    assert.equal(run.status, 'completed', JSON.stringify(run));
    // The run shows completed as soon as its state says so; wait until its workflow has closed
    // (the finalize activity reported back) before Temporal is made to forget it.
    const client = temporalClient(svc);
    await client.workflow.getHandle(runId).result();
    assert.equal((await svc.store.collections.runs.findOne({ _id: runId }))?.finalized, true);
    await client.workflowService.deleteWorkflowExecution({
      namespace: svc.config.temporal.namespace,
      workflowExecution: { workflowId: runId },
    });
    await waitFor(
      async () => {
        try {
          await client.workflow.getHandle(runId).describe();
          return undefined;
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) return true;
          throw err;
        }
      },
      // Deleting a closed execution waits on Temporal's queue ack levels: 20-35 s on the dev server's defaults.
      { timeoutMs: 90_000, intervalMs: 250, what: 'Temporal to forget the run' },
    );
    await svc.stopWorker();

    const t0 = Date.now();
    const res = await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
    assert.ok(Date.now() - t0 < 5_000, 'GET must not wait on Temporal');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, run);
    assert.deepEqual(texts(res.body.output.greeting), ['Hello, Grace!']);
    assert.equal(res.body.total_cost, START_FEE_USD);
    assert.equal(typeof res.body.completed_at, 'string');
  });
});
