/**
 * A run terminated from outside is settled by the API with what it ran, replayed from its history
 * by a worker (api/runs/settle-run.ts). With no worker to replay it, the settle waits for a later
 * read instead of billing $0 for good.
 */
import assert from 'node:assert/strict';
import { deriveId } from '../../../store/ids';
import { publish, rowsWorkflow, waitForRun } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { startRun } from '../../support/runs';
import { money } from '../../support/reruns';
import { temporalClient } from '../../support/service';
import { useService } from '../../support/use-service';

const PRICES = { 'gpt-test': { input_per_mtok: 10, output_per_mtok: 20 } }; // $0.002 a call
const FEE = 0.001;

describe('settling a terminated run while no worker can replay it', function () {
  this.timeout(180_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: { PRICES: JSON.stringify(PRICES), START_FEE_USD: String(FEE) },
  });

  it('books nothing until a worker replays the run, then bills what it ran (before: $0, for good)', async () => {
    const { key } = await ctx.newAccount();
    await publish(ctx.svc.url, key, rowsWorkflow('unreplayed', '{{row}}', { concurrency: 4 }));
    const rows = ['paid 0', 'paid 1', 'paid 2', 'held hold:unreplayed'];
    const runId = await startRun(ctx.svc.url, key, 'unreplayed', { rows });
    const paid = money(FEE + 3 * 0.002);
    await waitFor(
      async () => {
        const live = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
        return live.body.total_cost >= paid ? true : undefined;
      },
      { what: 'the 3 calls counted by the run' },
    );
    await temporalClient(ctx.svc).workflow.getHandle(runId).terminate('an operator stopped it');
    const stopping = ctx.svc.stopWorker();
    ctx.fake.release('unreplayed');
    await stopping;
    try {
      // The read asks for the settle, which finds no worker to replay the run within its deadline.
      await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key, timeoutMs: 60_000 });
      const c = ctx.svc.store.collections;
      assert.equal(await c.ledger.findOne({ _id: deriveId('led', runId) }), null, 'no debit yet');
      assert.equal((await c.runs.findOne({ _id: runId }))?.finalized ?? false, false);
    } finally {
      await ctx.svc.startWorker();
    }
    const run = await waitForRun(ctx.svc.url, key, runId);
    assert.equal(run.status, 'failed');
    assert.match(run.error, /terminated/);
    assert.equal(run.total_cost, paid);
  });
});
