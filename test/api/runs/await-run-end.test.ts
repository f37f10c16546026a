// D28: `Prefer: wait=N` on an async start (its parsing: test/api/routes/responses-prefer-wait.unit.test.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { llmWorkflow, waitForRun } from '../../support/fixtures';
import { call } from '../../support/http';
import { temporalClient } from '../../support/service';
import { useService } from '../../support/use-service';

const workflow = llmWorkflow('echo');

describe('Prefer: wait (D28)', function () {
  this.timeout(60_000);
  const ctx = useService({ fakeOpenAI: true });

  /** A start of `echo` with `topic`, holding its answer for `prefer` (and any other headers). */
  const startEcho = (topic: string, prefer: string, headers: Record<string, string> = {}) =>
    call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      headers: { Prefer: prefer, ...headers },
      body: { workflowId: 'echo', inputs: { topic } },
    });

  before(async () => {
    assert.equal(
      (await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key: ctx.key, body: workflow }))
        .status,
      201,
    );
  });

  it('answers 200 with the full run record when the run ends within the wait', async () => {
    const res = await startEcho('hi', 'wait=20');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('preference-applied'), 'wait=20');
    assert.equal(res.body.status, 'completed');
    assert.equal(res.body.output.answer[0].parts[0].text, 'echo: hi');
    assert.ok(res.body.completed_at);
  });

  it('answers the usual 202 when the wait is over first', async () => {
    const res = await startEcho('slow:4000 later', 'wait=1');
    assert.equal(res.status, 202);
    assert.equal(res.body.status, 'pending');
    assert.equal(res.headers.get('preference-applied'), null);
  });

  it('a repeat with the same Idempotency-Key waits for the run the first one started (D18)', async () => {
    const idempotencyKey = `wait-${randomUUID()}`;
    const start = () => startEcho('twice', 'wait=20', { 'Idempotency-Key': idempotencyKey });
    const first = await start();
    assert.equal(first.status, 200);
    // The repeat starts nothing: it waits on the run that has ended, and answers from its record.
    const repeat = await start();
    assert.equal(repeat.status, 200);
    assert.equal(repeat.body.id, first.body.id);
    assert.equal(repeat.body.status, 'completed');
    assert.equal(repeat.body.output.answer[0].parts[0].text, 'echo: twice');
  });

  it('a wait over before any worker took the run answers 202, and the run is started all the same', async () => {
    await ctx.svc.stopWorker();
    let runId: string;
    try {
      const res = await startEcho('queued', 'wait=1');
      assert.equal(res.status, 202);
      runId = res.body.run_id;
      // The start carried the wait, whose end came before Temporal's first answer: the run is there.
      const described = await temporalClient(ctx.svc).workflow.getHandle(runId).describe();
      assert.equal(described.status.name, 'RUNNING');
    } finally {
      await ctx.svc.startWorker();
    }
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(run.status, 'completed');
    assert.equal(run.output.answer[0].parts[0].text, 'echo: queued');
  });
});
