/**
 * D26: DELETE /api/v1/workflows/{workflowId} on the real stack: the workflow and its versions are
 * gone (contract, starts and re-runs 404, its slug free for a new workflow), another account's is
 * never reached, and a run already under way finishes and stays readable.
 */
import assert from 'node:assert/strict';
import { expectError } from '../../support/api-assert';
import { PRICES } from '../../support/execution';
import { greetingWorkflow, llmWorkflow, publish, waitForRun } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { startRun } from '../../support/runs';
import { useService } from '../../support/use-service';

describe('deleting a workflow (D26)', function () {
  this.timeout(60_000);
  const ctx = useService({ fakeOpenAI: true, credit: 100, env: { PRICES } });

  const del = (key: string, ref: string) =>
    call(ctx.svc.url, 'DELETE', `/api/v1/workflows/${ref}`, { key });
  const notFound = { status: 404, type: 'not_found_error', code: 'published_workflow_not_found' };

  it('removes every version: contract, starts and re-runs are 404, and the slug is free again', async () => {
    const v1 = await publish(ctx.svc.url, ctx.key, greetingWorkflow('gone', 'Hello'));
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('gone', 'Howdy'));
    const before = await startRun(ctx.svc.url, ctx.key, 'gone', { name: 'Ada' });
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, before)).status, 'completed');

    const res = await del(ctx.key, 'gone');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { id: v1.workflow_id, object: 'workflow', deleted: true });
    expectError(await del(ctx.key, v1.workflow_id), notFound);
    for (const ref of ['gone', v1.workflow_id]) {
      expectError(
        await call(ctx.svc.url, 'GET', `/api/v1/workflows/${ref}`, { key: ctx.key }),
        notFound,
      );
      const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: ref, version: v1.version_id, inputs: { name: 'Bo' } },
      });
      expectError(start, notFound);
    }
    const listed = await call(ctx.svc.url, 'GET', '/api/v1/workflows?limit=100', { key: ctx.key });
    assert.ok(!listed.body.data.some((w: any) => w.workflow_id === v1.workflow_id));
    // The run it made stays readable; a re-run has no version to run.
    const run = await call(ctx.svc.url, 'GET', `/api/v1/runs/${before}`, { key: ctx.key });
    assert.equal(run.status, 200);
    assert.equal(
      run.body.output.greeting[0].parts[0].text,
      'Howdy, Ada!',
      'the latest version ran',
    );
    assert.equal(run.body.published_workflow_id, v1.workflow_id);
    expectError(
      await call(ctx.svc.url, 'POST', `/api/v1/runs/${before}/rerun`, { key: ctx.key, body: {} }),
      notFound,
    );
    // Published again, the slug is a new workflow from version 1.
    const again = await publish(ctx.svc.url, ctx.key, greetingWorkflow('gone', 'Hi'));
    assert.notEqual(again.workflow_id, v1.workflow_id);
    assert.equal(again.version, 1);
    const after = await startRun(ctx.svc.url, ctx.key, 'gone', { name: 'Cy' });
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, after)).status, 'completed');
  });

  it('never reaches another account’s workflow, public or not', async () => {
    const other = await ctx.newAccount();
    const shared = await publish(
      ctx.svc.url,
      other.key,
      greetingWorkflow('theirs', 'Hi', { public: true }),
    );
    expectError(await del(ctx.key, shared.workflow_id), notFound);
    expectError(await del(ctx.key, 'theirs'), notFound);
    const contract = await call(ctx.svc.url, 'GET', `/api/v1/workflows/${shared.workflow_id}`, {
      key: ctx.key,
    });
    assert.equal(contract.status, 200, 'still there, and still public');
    expectError(await call(ctx.svc.url, 'DELETE', '/api/v1/workflows/theirs'), {
      status: 401,
      type: 'authentication_error',
      code: 'invalid_api_key',
    });
  });

  it('lets a run already under way finish', async () => {
    const tag = `del${Date.now()}`;
    await publish(ctx.svc.url, ctx.key, llmWorkflow('in-flight'));
    const runId = await startRun(ctx.svc.url, ctx.key, 'in-flight', { topic: `hold:${tag}` });
    await waitFor(async () => ctx.fake.requestsWith(`hold:${tag}`).length > 0 || undefined, {
      what: 'the run’s provider call',
    });
    assert.equal((await del(ctx.key, 'in-flight')).status, 200);
    ctx.fake.release(tag);
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(run.status, 'completed');
    assert.equal(run.output.answer.length, 1);
  });
});
