// D39 through the operator CLI: `runs delete RUN_ID` and `accounts delete-runs ACCOUNT_ID --yes`,
// live runs included (cancelled through Temporal first), on the real stack.
import assert from 'node:assert/strict';
import { runCli } from '../../cli/run-cli';
import { runStopper } from '../../cli/run-stopper';
import { filesCollection } from '../../store/files';
import { greetingWorkflow, promptWorkflow, publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { useService } from '../support/use-service';

describe('deleting runs with the operator CLI (D39)', function () {
  this.timeout(120_000);
  // Another process (an API) may serve a finished run's cached view for FINISHED_RUN_CACHE_MS after
  // the CLI deleted it (docs/decisions.md D39): short here, so the test sees the 404 that follows.
  const ctx = useService({ fakeOpenAI: true, env: { FINISHED_RUN_CACHE_MS: '300' } });

  async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, {
      collections: ctx.svc.store.collections,
      db: ctx.svc.store.db,
      runStopper: runStopper(ctx.svc.api.connection, ctx.svc.config.temporal.namespace),
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  const gone = async (key: string, runId: string) => {
    assert.equal(await ctx.svc.store.collections.runs.countDocuments({ _id: runId }), 0);
    await waitFor(
      async () =>
        (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key })).status === 404 ||
        undefined,
      { what: `GET ${runId} 404`, timeoutMs: 5_000 },
    );
  };

  it('deletes one run; a second delete says there is none', async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('cli-erase'));
    const runId = await startRun(ctx.svc.url, ctx.key, 'cli-erase', { name: 'Ada' });
    await waitForRun(ctx.svc.url, ctx.key, runId);
    const res = await cli('runs', 'delete', runId, '--json');
    assert.equal(res.code, 0, res.err);
    assert.deepEqual(JSON.parse(res.out), { id: runId, object: 'run', deleted: true });
    await gone(ctx.key, runId);
    const again = await cli('runs', 'delete', runId);
    assert.equal(again.code, 1);
    assert.match(again.err, /no run/);
  });

  it("deletes every run of an account, live ones cancelled first, and no other account's", async () => {
    const victim = await ctx.newAccount();
    await publish(ctx.svc.url, victim.key, greetingWorkflow('cli-many'));
    await publish(ctx.svc.url, victim.key, promptWorkflow('cli-slow', 'slow:20000'));
    const finished: string[] = [];
    for (let i = 0; i < 3; i++)
      finished.push(await startRun(ctx.svc.url, victim.key, 'cli-many', { name: `n${i}` }));
    for (const id of finished) await waitForRun(ctx.svc.url, victim.key, id);
    const live = await startRun(ctx.svc.url, victim.key, 'cli-slow', { topic: 'x' });
    await waitFor(
      async () =>
        (await call(ctx.svc.url, 'GET', `/api/v1/runs/${live}`, { key: victim.key })).body
          .status === 'running' || undefined,
      { what: 'the live run running' },
    );
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('cli-keep'));
    const kept = await startRun(ctx.svc.url, ctx.key, 'cli-keep', { name: 'Bo' });

    const refused = await cli('accounts', 'delete-runs', victim.accountId);
    assert.equal(refused.code, 2, 'needs --yes');
    const res = await cli('accounts', 'delete-runs', victim.accountId, '--yes', '--json');
    assert.equal(res.code, 0, res.err);
    assert.deepEqual(JSON.parse(res.out), { account_id: victim.accountId, deleted: 4 });
    for (const id of [...finished, live]) await gone(victim.key, id);
    assert.equal(
      (await call(ctx.svc.url, 'GET', '/api/v1/runs', { key: victim.key })).body.data.length,
      0,
    );
    // The live run was cancelled, so its own end billed it before its record went.
    const debit = await ctx.svc.store.collections.ledger.findOne({ run_id: live });
    assert.ok(debit && debit.amount_usd <= 0, JSON.stringify(debit));
    assert.equal(
      await filesCollection(ctx.svc.store.db).countDocuments({
        'metadata.account_id': victim.accountId,
        'metadata.source': { $ne: 'upload' },
      }),
      0,
    );
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, kept)).status, 'completed');
  });
});
