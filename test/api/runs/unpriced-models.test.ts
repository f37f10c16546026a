/**
 * D17 `UNPRICED_MODELS=refuse`: an operator who prices its models runs no other. A start whose
 * graph names a model PRICES does not list is refused before anything is held or recorded (with
 * the default, `free`, it would run on the operator's provider key and bill the tenant nothing).
 */
import assert from 'node:assert/strict';
import { expectError } from '../../support/api-assert';
import { llmWorkflow, publish, waitForRun } from '../../support/fixtures';
import { call } from '../../support/http';
import { useService } from '../../support/use-service';

describe('models the operator has no price for (UNPRICED_MODELS=refuse)', function () {
  this.timeout(60_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: {
      PRICES: JSON.stringify({ 'gpt-test': { input_per_mtok: 10, output_per_mtok: 20 } }),
      UNPRICED_MODELS: 'refuse',
    },
  });

  it('refuses a start naming an unpriced model with 400 model_not_offered; a priced one runs', async () => {
    const { accountId, key } = await ctx.newAccount(1);
    const free = llmWorkflow('free-ride');
    await publish(ctx.svc.url, key, {
      ...free,
      nodes: free.nodes.map((n) => (n.type === 'llm' ? { ...n, model: 'gpt-dear' } : n)),
    });
    const refused = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'free-ride', inputs: { topic: 'hi' } },
    });
    expectError(refused, { status: 400, type: 'invalid_request_error', code: 'model_not_offered' });
    assert.match(refused.body.error.message, /`gpt-dear` \(node `\w+`\)/);
    const c = ctx.svc.store.collections;
    assert.equal(await c.runs.countDocuments({ account_id: accountId }), 0, 'nothing recorded');

    await publish(ctx.svc.url, key, llmWorkflow('priced'));
    const ok = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'priced', inputs: { topic: 'hi' } },
    });
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    assert.equal((await waitForRun(ctx.svc.url, key, ok.body.run_id)).status, 'completed');
  });
});
