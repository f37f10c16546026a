import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startService, type TestService } from '../support/service';
import { newAccount } from '../support/accounts';
import { call, waitFor } from '../support/http';

describe('smoke: publish and run hello', function () {
  this.timeout(120_000);
  let svc: TestService;
  before(async () => {
    svc = await startService();
  });
  after(async () => svc?.close());

  it('publishes, starts and completes', async () => {
    const { key } = await newAccount(svc.store.collections);
    const doc = JSON.parse(readFileSync('examples/hello.json', 'utf8'));
    const pub = await call(svc.url, 'POST', '/api/v1/workflows', { key, body: doc });
    assert.equal(pub.status, 201, JSON.stringify(pub.body));
    const t0 = Date.now();
    const start = await call(svc.url, 'POST', '/api/v1/responses', { key, body: { workflowId: 'hello', inputs: { name: 'Ada' } } });
    assert.equal(start.status, 202, JSON.stringify(start.body));
    const run = await waitFor(async () => {
      const r = await call(svc.url, 'GET', `/api/v1/runs/${start.body.run_id}`, { key });
      if (r.body.status !== "pending") console.log(JSON.stringify(r.body).slice(0,300)); return r.body.status === "completed" ? r.body : undefined;
    });
    console.log(Date.now() - t0, JSON.stringify(run));
    assert.equal(run.output.greeting[0].parts[0].text, 'Hello, Ada!');
  });
});
