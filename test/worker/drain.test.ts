/**
 * The worker's SIGTERM drain on the production entry (worker/main.ts) as a child process, with a
 * provider call in flight: within WORKER_SHUTDOWN_GRACE_MS the call finishes on the draining
 * worker (the provider is called once); past it the attempt is cancelled and handed back, and
 * Temporal retries it on the next worker. Either way the process exits 0, the run completes on
 * the next worker and is billed once (docs/deploy.md "Draining").
 */
import assert from 'node:assert/strict';
import { batchWorkflow, publish, rowsWorkflow, waitForRun } from '../support/fixtures';
import { waitFor } from '../support/http';
import { bookedDebit, startRun } from '../support/runs';
import { useService } from '../support/use-service';
import { startWorkerProcess, useWorkerProcesses } from '../support/worker-process';

describe('worker drain on SIGTERM (worker/main.ts)', function () {
  this.timeout(120_000);
  const workers = useWorkerProcesses();
  const ctx = useService({ fakeOpenAI: true, worker: false });

  /** Runs `doc` on a worker process of this grace, SIGTERMs it mid-call, finishes on the next worker. */
  async function drainMidCall(
    doc: { slug: string },
    graceMs: number,
    inputs: Record<string, unknown> = {},
  ) {
    const { slug } = doc;
    await publish(ctx.svc.url, ctx.key, doc);
    const worker = startWorkerProcess(ctx.svc.config, {
      env: { OPENAI_BASE_URL: ctx.fake.baseUrl, WORKER_SHUTDOWN_GRACE_MS: String(graceMs) },
    });
    workers.push(worker);
    const exited = new Promise<number | null>((resolve) => worker.child.once('exit', resolve));
    const runId = await startRun(ctx.svc.url, ctx.key, slug, inputs);
    await waitFor(async () => (ctx.fake.requestsWith(slug).length ? true : undefined), {
      timeoutMs: 60_000,
      what: `the provider call (worker: ${worker.stderr()})`,
    });
    const sigterm = Date.now();
    worker.child.kill('SIGTERM');
    await ctx.svc.startWorker(); // the next worker, polling while the old one drains
    try {
      assert.equal(await exited, 0, worker.stderr());
      const drainMs = Date.now() - sigterm;
      const ended = await waitForRun(ctx.svc.url, ctx.key, runId, 60_000);
      assert.equal(ended.status, 'completed', JSON.stringify(ended));
      // One debit: its id derives from the run's (D17), so it is booked once however often posted.
      const debit = await bookedDebit(ctx.svc.store.collections, runId);
      assert.equal(debit.amount_usd, -ended.total_cost, 'billed once, for what ran');
      return { calls: ctx.fake.requestsWith(slug), drainMs, ended };
    } finally {
      await ctx.svc.stopWorker();
    }
  }

  it('lets a provider call in flight finish within the grace: called once, exit 0', async () => {
    const { calls, drainMs } = await drainMidCall(
      batchWorkflow('drain-finish', ['slow:3000 drain-finish']),
      30_000,
    );
    assert.equal(calls.length, 1, 'the provider was called once');
    assert.equal(calls[0].aborted, false, 'the call in flight was not cut');
    assert.ok(drainMs < 30_000, `drained in ${drainMs} ms`);
  });

  it('past the grace, cancels the attempt and hands it back: retried on the next worker, billed once, exit 0', async () => {
    const { calls } = await drainMidCall(
      batchWorkflow('drain-handback', ['slow:4000 drain-handback']),
      500,
    );
    assert.equal(calls[0].aborted, true, 'the first attempt was cut at the grace');
    assert.equal(calls.length, 2, 'one retry, on the next worker');
    assert.equal(calls[1].answered, true);
  });

  it("hands back a big run's block (D35) the same way: every row answered once, billed once", async () => {
    // More rows than twice the run's concurrency (8): the node runs as stored blocks.
    const rows = Array.from({ length: 20 }, (_, i) => `slow:2000 drain-block row${i}`);
    const { calls, ended } = await drainMidCall(rowsWorkflow('drain-block'), 500, { rows });
    assert.ok(
      calls.some((c) => c.aborted),
      'the first attempt was cut at the grace',
    );
    for (let i = 0; i < rows.length; i++)
      assert.equal(
        calls.filter((c) => c.answered && c.prompt.endsWith(` row${i}`)).length,
        1,
        `row ${i} answered once`,
      );
    assert.equal(ended.output.answers.length, rows.length);
  });
});
