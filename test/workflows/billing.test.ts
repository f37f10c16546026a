/**
 * A run's money and ownership on the real stack: one ledger debit per run however often it is
 * finalized (D17), and a run another account's key cannot see (spec "Authentication").
 */
import assert from 'node:assert/strict';
import { accountBalance } from '../../store/ledger';
import { findRunRecord } from '../../store/runs';
import { createActivities } from '../../activities';
import type { RunFinal } from '../../domain/run';
import { useService } from '../support/use-service';
import { call, waitFor } from '../support/http';
import { batchWorkflow, publish, waitForRun } from '../support/fixtures';
import { expectError } from '../support/api-assert';
import { runToEnd, startRun, storedLog } from '../support/runs';
import { LLM_CALL_USD, PRICES, START_FEE_USD } from '../support/execution';

describe('workflow execution: billing and ownership (real Temporal + FerretDB)', function () {
  this.timeout(120_000);
  const ctx = useService({ fakeOpenAI: true, env: { PRICES }, account: false });

  it('debits the run exactly once in the ledger, and finalizing again changes nothing', async () => {
    const { svc } = ctx;
    const { collections } = svc.store;
    const { key, accountId } = await ctx.newAccount(10);
    const before = await accountBalance(collections, accountId);
    const doc = batchWorkflow('billed', ['a', 'b'], 'Price {{row}}', 'Out');
    const run = await runToEnd(svc.url, key, doc);
    assert.equal(run.status, 'completed', JSON.stringify(run));
    const expected = START_FEE_USD + 2 * LLM_CALL_USD;
    assert.ok(
      Math.abs(run.total_cost - expected) < 1e-9,
      `total_cost ${run.total_cost}, expected ${expected}`,
    );

    const snapshotState = async () => ({
      entries: await collections.ledger.find({ run_id: run.id }).toArray(),
      balance: await accountBalance(collections, accountId),
      record: (await findRunRecord(collections, run.id))!,
    });
    // The run answers completed from its workflow; its finalize (debit, then record) may still be under way.
    const first = await waitFor(async () => {
      const state = await snapshotState();
      return state.entries.length > 0 && state.record.finalized ? state : undefined;
    });
    assert.equal(first.entries.length, 1, JSON.stringify(first.entries));
    const [entry] = first.entries;
    assert.equal(entry.kind, 'run');
    assert.equal(entry.account_id, accountId);
    assert.equal(entry.amount_usd, -run.total_cost);
    assert.ok(
      Math.abs(before - first.balance - run.total_cost) < 1e-9,
      `balance ${before} → ${first.balance}`,
    );
    assert.equal(first.record.finalized, true);

    // The finalize activity again, as a Temporal retry would run it, with the same final.
    const activities = createActivities({ collections, config: svc.config });
    const final: RunFinal = {
      runId: run.id,
      accountId,
      status: first.record.status as RunFinal['status'],
      output: first.record.output,
      error: first.record.error,
      totalCost: first.record.total_cost!,
      completedAtMs: first.record.completed_at!.getTime(),
      events: await storedLog(collections, run.id),
      itemIdBase: first.record.item_id_base ?? undefined,
    };
    await activities.finalizeRun(final);
    await activities.finalizeRun(final);
    // Even a different final (a replay that disagreed) cannot write or debit a second time.
    await activities.finalizeRun({
      ...final,
      status: 'failed',
      output: null,
      error: 'late',
      totalCost: 5,
      completedAtMs: Date.now(),
    });
    assert.deepEqual(await snapshotState(), first);
    const reread = await call(svc.url, 'GET', `/api/v1/runs/${run.id}`, { key });
    assert.deepEqual(reread.body, run);
  });

  it("answers 404 not_found_error to another account's key", async () => {
    const { svc } = ctx;
    const owner = await ctx.newAccount();
    const other = await ctx.newAccount();
    const doc = {
      slug: 'private-run',
      nodes: [
        { id: 'say', type: 'text', template: 'secret' },
        { id: 'out', type: 'user_result', label: 'Out' },
      ],
      edges: [{ from: 'say', to: 'out' }],
    };
    await publish(svc.url, owner.key, doc);
    const runId = await startRun(svc.url, owner.key, doc.slug);
    // While it may still be live ...
    expectError(await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key: other.key }), {
      status: 404,
      type: 'not_found_error',
    });
    const run = await waitForRun(svc.url, owner.key, runId);
    assert.equal(run.status, 'completed');
    // ... and once it is finished.
    const res = await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key: other.key });
    const error = expectError(res, { status: 404, type: 'not_found_error', code: 'not_found' });
    assert.doesNotMatch(JSON.stringify(error), /secret/);
  });
});
