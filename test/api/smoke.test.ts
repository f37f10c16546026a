import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { call, waitFor } from '../support/http';
import { useService } from '../support/use-service';

describe('smoke: publish and run hello', function () {
  this.timeout(120_000);
  const ctx = useService({ account: false });

  it('publishes, starts and completes', async () => {
    const { key } = await ctx.newAccount();
    const doc = JSON.parse(readFileSync('examples/hello.json', 'utf8'));
    const pub = await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key, body: doc });
    assert.equal(pub.status, 201, JSON.stringify(pub.body));
    const t0 = Date.now();
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'hello', inputs: { name: 'Ada' } },
    });
    assert.equal(start.status, 202, JSON.stringify(start.body));
    const run = await waitFor(async () => {
      const r = await call(ctx.svc.url, 'GET', `/api/v1/runs/${start.body.run_id}`, { key });
      if (r.body.status !== 'pending') console.log(JSON.stringify(r.body).slice(0, 300));
      return r.body.status === 'completed' ? r.body : undefined;
    });
    console.log(Date.now() - t0, JSON.stringify(run));
    assert.equal(run.output.greeting[0].parts[0].text, 'Hello, Ada!');
  });
});
