/**
 * D31: rows given in the request are made into items in the run's workflow code, so a list of
 * more than INLINE_MAX_ROWS of them is refused at the start (400 `run_too_large`, nothing billed):
 * 480,000 rows (a 1 MiB body of `0,`s) held one workflow task past 5 s, where the SDK's deadlock
 * detector aborts the whole worker. A file holds up to MAX_ROWS.
 */
import assert from 'node:assert/strict';
import { INLINE_MAX_ROWS } from '../../../domain/run-size';
import { expectError } from '../../support/api-assert';
import { publish, textRowsWorkflow } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { useService } from '../../support/use-service';

describe('rows in the request (D31)', function () {
  this.timeout(60_000);
  const ctx = useService({ worker: false });

  it('refuses a list of more than INLINE_MAX_ROWS rows, as an array or as JSON text, before anything is billed', async () => {
    const { accountId, key } = await ctx.newAccount();
    await publish(ctx.svc.url, key, textRowsWorkflow('many-rows', '{{row}}'));
    const rows = Array.from({ length: INLINE_MAX_ROWS + 1 }, () => 0);
    for (const given of [rows, JSON.stringify(rows)]) {
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key,
        body: { workflowId: 'many-rows', inputs: { rows: given } },
      });
      expectError(res, { status: 400, type: 'invalid_request_error', code: 'run_too_large' });
      assert.match(res.body.error.message, /has 100001 rows.*Upload them as a file/);
    }
    const c = ctx.svc.store.collections;
    assert.equal(await c.runs.countDocuments({ account_id: accountId }), 0);
  });

  it('refuses a start past what Temporal takes for a run (a 1 MB default and a 1 MB input) with 400, its hold given back (before: 500, an alert’s server error)', async () => {
    const { accountId, key } = await ctx.newAccount();
    const big = 'd'.repeat(1_000_000);
    await publish(ctx.svc.url, key, {
      slug: 'big-start',
      nodes: [
        {
          id: 'a',
          type: 'user_input',
          label: 'A',
          input_type: 'text',
          required: false,
          default: big,
        },
        { id: 'b', type: 'user_input', label: 'B', input_type: 'text' },
        { id: 'out', type: 'user_result', label: 'Out' },
      ],
      edges: [{ from: 'b', to: 'out' }],
    });
    const credit = async () =>
      (await call(ctx.svc.url, 'GET', '/api/v1/account', { key })).body.credits.available_usd;
    const before = await credit();
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'big-start', inputs: { b: 'i'.repeat(1_000_000) } },
    });
    expectError(res, { status: 400, type: 'invalid_request_error', code: 'run_too_large' });
    assert.match(res.body.error.message, /pass the 2 MB the workflow service takes/);
    // Given back through this process's credit lease, which the account view sees once settled.
    await waitFor(async () => ((await credit()) === before ? true : undefined), {
      what: 'the hold given back',
    });
    assert.equal(await ctx.svc.store.collections.runs.countDocuments({ account_id: accountId }), 0);
  });
});
