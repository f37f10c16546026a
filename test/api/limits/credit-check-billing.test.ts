/**
 * Credits (D17) end to end: a start at zero balance is 402 and starts no Temporal
 * workflow; a run's cost is debited exactly once even when the worker is SIGKILLed in the
 * middle of the debit and a new worker finishes it.
 */
import assert from 'node:assert/strict';
import { addCredits } from '../../../store/accounts';
import { deriveId } from '../../../store/ids';
import { accountBalance } from '../../../store/ledger';
import { newAccount } from '../../support/accounts';
import { expectError } from '../../support/api-assert';
import { greetingWorkflow, publish } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { hasStringElement, startMongoProxy, type MongoProxy } from '../../support/mongo-proxy';
import { type TestService, temporalClient } from '../../support/service';
import { startWorkerProcess, type WorkerProcess } from '../../support/worker-process';
import { useService } from '../../support/use-service';

/** The Temporal workflows of an account, by its search attribute (as an operator would filter). */
async function workflowsOf(svc: TestService, accountId: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of temporalClient(svc).workflow.list({
    query: `WrsAccountId = "${accountId}"`,
  }))
    ids.push(wf.workflowId);
  return ids;
}

describe('billing (D17): 402 at zero balance, one debit per run across a worker crash', function () {
  this.timeout(180_000);
  // No in-process worker: the crash test runs the worker as a child process it can kill.
  const ctx = useService({ account: false, worker: false });

  it('answers a start at zero balance with 402 and starts no Temporal workflow', async () => {
    const broke = await ctx.newAccount(0);
    await publish(ctx.svc.url, broke.key, greetingWorkflow('greet'));
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: broke.key,
      body: { workflowId: 'greet', inputs: { name: 'x' } },
    });
    expectError(res, { status: 402, type: 'insufficient_credits', code: 'insufficient_credits' });
    assert.equal(
      await ctx.svc.store.collections.runs.countDocuments({ account_id: broke.accountId }),
      0,
    );
    assert.deepEqual(await workflowsOf(ctx.svc, broke.accountId), []);

    // The same query does see a workflow of this account once one is started, so the empty list above means something.
    await addCredits(ctx.svc.store.collections, broke.accountId, 1, 'test: top-up');
    const ok = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: broke.key,
      body: { workflowId: 'greet', inputs: { name: 'x' } },
    });
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    const seen = await waitFor(
      async () => {
        const ids = await workflowsOf(ctx.svc, broke.accountId);
        return ids.length > 0 ? ids : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 200, what: 'the workflow in Temporal visibility' },
    );
    assert.deepEqual(seen, [ok.body.run_id]);
  });

  it("debits a run's cost once when the worker is killed in the middle of the debit and another one finishes it", async () => {
    const c = ctx.svc.store.collections;
    const { accountId, key } = await newAccount(c, 10);
    await publish(ctx.svc.url, key, greetingWorkflow('greet'));
    const opening = await accountBalance(c, accountId);

    // The first worker reaches MongoDB through a proxy that lets the debit's insert through
    // (store/ledger.ts) and then holds everything: the worker hangs right after booking it.
    let proxy: MongoProxy | undefined;
    const workers: WorkerProcess[] = [];
    try {
      // Only this account's debit: the worker also finishes runs other tests left queued.
      proxy = await startMongoProxy(
        ctx.svc.config.mongo.uri,
        (m) => hasStringElement(m, 'insert', 'ledger') && m.includes(accountId),
      );
      workers.push(startWorkerProcess(ctx.svc.config, { mongoUri: proxy.uri }));
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key,
        body: { workflowId: 'greet', inputs: { name: 'Ada' } },
      });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      const runId: string = res.body.run_id;
      const entryId = deriveId('led', runId);

      await Promise.race([
        proxy.frozen,
        new Promise((_, reject) =>
          setTimeout(
            () => reject(new Error(`the worker never reached the debit: ${workers[0].stderr()}`)),
            90_000,
          ),
        ),
      ]);
      // Mid-finalize: the debit is booked (it comes first, store/run-end.ts), the record is not
      // written yet, and the activity never completes.
      const entry = await waitFor(
        async () => (await c.ledger.findOne({ _id: entryId })) ?? undefined,
        {
          what: 'the debit to land',
        },
      );
      assert.equal((await c.runs.findOne({ _id: runId }))!.finalized, false);
      const cost = -entry.amount_usd;
      assert.ok(cost > 0, `cost ${cost}`);
      assert.ok(Math.abs((await accountBalance(c, accountId)) - (opening - cost)) < 1e-9);

      await workers[0].kill();
      // Another worker, straight to the database: Temporal retries the finalize activity once the
      // killed attempt times out, and the retry must find the debit booked, book nothing more and
      // write the record.
      workers.push(startWorkerProcess(ctx.svc.config));
      // The workflow closes only once the retried finalize completed on the new worker.
      await temporalClient(ctx.svc).workflow.getHandle(runId).result();
      const final = await waitFor(
        async () => {
          const r = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
          return r.body.status === 'completed' ? r.body : undefined;
        },
        { what: 'the run to read completed' },
      );
      assert.equal(final.total_cost, cost);
      const debits = await c.ledger.find({ account_id: accountId, kind: 'run' }).toArray();
      assert.deepEqual(
        debits.map((e) => [e._id, e.run_id, e.amount_usd]),
        [[entryId, runId, -cost]],
      );
      assert.ok(
        Math.abs((await accountBalance(c, accountId)) - (opening - cost)) < 1e-9,
        'the balance moved exactly once',
      );
    } finally {
      for (const w of workers) await w.kill();
      await proxy?.close();
    }
  });
});
