// D28: `Prefer: wait=N` on an async start (its parsing: test/api/routes/responses-prefer-wait.unit.test.ts).
import assert from 'node:assert/strict';
import { llmWorkflow } from '../../support/fixtures';
import { call } from '../../support/http';
import { useService } from '../../support/use-service';

const workflow = llmWorkflow('echo');

describe('Prefer: wait (D28)', function () {
  this.timeout(60_000);
  const ctx = useService({ fakeOpenAI: true });

  before(async () => {
    assert.equal(
      (await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key: ctx.key, body: workflow }))
        .status,
      201,
    );
  });

  it('answers 200 with the full run record when the run ends within the wait', async () => {
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      headers: { Prefer: 'wait=20' },
      body: { workflowId: 'echo', inputs: { topic: 'hi' } },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('preference-applied'), 'wait=20');
    assert.equal(res.body.status, 'completed');
    assert.equal(res.body.output.answer[0].parts[0].text, 'echo: hi');
    assert.ok(res.body.completed_at);
  });

  it('answers the usual 202 when the wait is over first', async () => {
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      headers: { Prefer: 'wait=1' },
      body: { workflowId: 'echo', inputs: { topic: 'slow:4000 later' } },
    });
    assert.equal(res.status, 202);
    assert.equal(res.body.status, 'pending');
    assert.equal(res.headers.get('preference-applied'), null);
  });
});
