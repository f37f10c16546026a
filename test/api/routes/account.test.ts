/**
 * GET /api/v1/account (D41) on the real stack: the caller's balance, what its run in progress
 * holds and what is available, following a run from its start to its debit; its storage quotas
 * following an upload and a publish; only ever its own account.
 */
import assert from 'node:assert/strict';
import { PRICES } from '../../support/execution';
import { llmWorkflow, publish, waitForRun } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { startRun } from '../../support/runs';
import { useService } from '../../support/use-service';
import { roundUsd } from '../../../store/ledger';
import { publishedBytes } from '../../../store/workflows';

const FILE_QUOTA = 5_000_000;
const WORKFLOW_QUOTA = 700_000;

describe('GET /api/v1/account (D41)', function () {
  this.timeout(60_000);
  const ctx = useService({
    fakeOpenAI: true,
    credit: 10,
    env: {
      PRICES,
      FILE_STORAGE_MAX_BYTES: String(FILE_QUOTA),
      WORKFLOW_STORAGE_MAX_BYTES: String(WORKFLOW_QUOTA),
    },
  });
  const account = async (key: string) => {
    const res = await call(ctx.svc.url, 'GET', '/api/v1/account', { key });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };

  it('shows a new account its credit and empty storage', async () => {
    const fresh = await ctx.newAccount(3);
    assert.deepEqual(await account(fresh.key), {
      id: fresh.accountId,
      object: 'account',
      name: (await ctx.svc.store.collections.accounts.findOne({ _id: fresh.accountId }))!.name,
      credits: { balance_usd: 3, held_usd: 0, available_usd: 3 },
      file_storage: { used_bytes: 0, quota_bytes: FILE_QUOTA },
      workflow_storage: { used_bytes: 0, quota_bytes: WORKFLOW_QUOTA },
    });
  });

  it('shows a run’s hold while it works and its debit once it ended', async () => {
    await publish(ctx.svc.url, ctx.key, llmWorkflow('account-llm'));
    const tag = `acct${Date.now()}`;
    const runId = await startRun(ctx.svc.url, ctx.key, 'account-llm', { topic: `hold:${tag}` });
    await waitFor(async () => ctx.fake.requestsWith(`hold:${tag}`).length > 0 || undefined, {
      what: 'the run’s provider call',
    });
    const working = (await account(ctx.key)).credits;
    assert.equal(working.balance_usd, 10);
    // The start fee and the llm call's estimate (D17), and any lease the API took with them.
    assert.ok(working.held_usd >= 0.011, JSON.stringify(working));
    assert.equal(working.available_usd, roundUsd(10 - working.held_usd));

    ctx.fake.release(tag);
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(run.status, 'completed');
    assert.ok(run.total_cost > 0);
    const balance = roundUsd(10 - run.total_cost);
    // Given back by the run's debit and, for the rest of a lease, 5 s after the start.
    const ended = await waitFor(
      async () => {
        const { credits } = await account(ctx.key);
        return credits.held_usd === 0 && credits.balance_usd === balance ? credits : undefined;
      },
      { what: 'the debit booked and the hold given back' },
    );
    assert.deepEqual(ended, { balance_usd: balance, held_usd: 0, available_usd: balance });
  });

  it('shows what its uploads and published versions hold, and only its own', async () => {
    const own = await ctx.newAccount(1);
    const bytes = Buffer.from('twelve bytes');
    const upload = await fetch(`${ctx.svc.url}/api/v1/files?name=a.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${own.key}`, 'content-type': 'text/plain' },
      body: bytes,
    });
    assert.equal(upload.status, 201);
    await publish(ctx.svc.url, own.key, llmWorkflow('account-storage'));
    const view = await account(own.key);
    assert.deepEqual(view.file_storage, { used_bytes: bytes.length, quota_bytes: FILE_QUOTA });
    const versions = await publishedBytes(ctx.svc.store.collections, own.accountId);
    assert.ok(versions > 0);
    assert.deepEqual(view.workflow_storage, { used_bytes: versions, quota_bytes: WORKFLOW_QUOTA });
    assert.deepEqual(view.credits, { balance_usd: 1, held_usd: 0, available_usd: 1 });

    const other = await ctx.newAccount(2);
    const theirs = await account(other.key);
    assert.equal(theirs.id, other.accountId);
    assert.equal(theirs.file_storage.used_bytes, 0);
    assert.equal(theirs.workflow_storage.used_bytes, 0);
    assert.equal(theirs.credits.balance_usd, 2);
  });
});
