// Cancelling runs (D8) and the cancelled stream (D14).
import assert from 'node:assert/strict';
import { llmWorkflow } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { finalizedRecord } from '../../support/runs';
import { events, openSse } from '../../support/sse';
import { useService } from '../../support/use-service';

const slowLlm = llmWorkflow('slow');

describe('cancel (D8, D14)', function () {
  this.timeout(60_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: { PRICES: JSON.stringify({ 'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 } }) },
  });

  before(async () => {
    assert.equal(
      (await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key: ctx.key, body: slowLlm }))
        .status,
      201,
    );
  });

  it('cancels mid-LLM-call: the provider sees the request aborted, the stream ends with response.cancelled', async () => {
    const stream = await openSse(`${ctx.svc.url}/api/v1/responses`, {
      method: 'POST',
      key: ctx.key,
      body: { workflowId: 'slow', stream: true, inputs: { topic: 'slow:30000 cancel-me' } },
    });
    const created = await stream.until((f) => f.event?.type === 'response.created');
    const runId = created.event.response.run_id;
    await stream.until((f) => f.event?.type === 'response.output_item.added');
    await waitFor(
      async () => (ctx.fake.requestsWith('cancel-me').length === 1 ? true : undefined),
      { what: 'LLM call in flight' },
    );

    const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
      key: ctx.key,
    });
    assert.equal(cancel.status, 202);
    assert.equal(cancel.body.id, runId);
    assert.ok(['running', 'cancelled'].includes(cancel.body.status));

    await stream.closed;
    const log = events(stream);
    assert.deepEqual(log.at(-1), {
      type: 'response.cancelled',
      sequence_number: log.at(-1).sequence_number,
      response: { usage: null, service_tier: null },
    });
    assert.equal(stream.frames.at(-1)!.data, '[DONE]');
    await waitFor(async () => (ctx.fake.requestsWith('cancel-me')[0].aborted ? true : undefined), {
      what: 'provider saw the abort',
    });

    const record = await finalizedRecord(ctx.svc.store.collections, runId);
    assert.equal(record.status, 'cancelled');
    const read = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(read.body.status, 'cancelled');
    assert.equal(read.body.output, null); // unfinished items stay out of output (D8)
    // What ran is billed once: here only the start fee, as the aborted call produced nothing.
    const debits = await ctx.svc.store.collections.ledger.find({ run_id: runId }).toArray();
    assert.equal(debits.length, 1);
    assert.equal(debits[0].amount_usd, -read.body.total_cost);
    assert.equal(read.body.total_cost, 0.001);

    const again = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, { key: ctx.key });
    assert.equal(again.status, 202); // cancelling a cancelled run is a no-op
    assert.equal(again.body.status, 'cancelled');
  });

  it('a cancel the last call answers before still ends the run cancelled, the answer kept and billed', async () => {
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'slow', inputs: { topic: 'hold:outrun-cancel' } },
    });
    const runId = start.body.run_id;
    await waitFor(
      async () => (ctx.fake.requestsWith('outrun-cancel').length === 1 ? true : undefined),
      { what: 'LLM call in flight' },
    );
    const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
      key: ctx.key,
    });
    assert.equal(cancel.status, 202);
    // The call answers at once: before its next heartbeat (1 s) could carry the cancel to it.
    ctx.fake.release('outrun-cancel');

    const record = await finalizedRecord(ctx.svc.store.collections, runId);
    assert.equal(record.status, 'cancelled', 'the cancel answered 202 holds');
    const items = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/answer`, {
      key: ctx.key,
    });
    assert.equal(items.status, 200);
    if (!ctx.fake.requestsWith('outrun-cancel')[0].aborted) {
      // The call finished: its answer is readable and billed with the fee.
      assert.equal(items.body.data.length, 1);
      assert.equal(items.body.data[0].status, 'completed');
      assert.ok((record.total_cost ?? 0) > 0.001, String(record.total_cost));
    }
  });

  it('cancels a pending run: it ends cancelled once a worker picks it up', async () => {
    await ctx.svc.stopWorker();
    try {
      const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'slow', inputs: { topic: 'slow:5000 pending' } },
      });
      const runId = start.body.run_id;
      const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
        key: ctx.key,
      });
      assert.equal(cancel.status, 202);
      assert.equal(cancel.body.status, 'pending');
      await ctx.svc.startWorker();
      const record = await finalizedRecord(ctx.svc.store.collections, runId);
      assert.equal(record.status, 'cancelled');
      assert.equal(ctx.fake.requestsWith('pending').length, 0); // nothing ran
    } finally {
      await ctx.svc.startWorker();
    }
  });

  it('refuses to cancel a completed run (409 run_not_cancellable), and another account’s run is 404', async () => {
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'slow', inputs: { topic: 'quick' } },
    });
    const runId = start.body.run_id;
    await finalizedRecord(ctx.svc.store.collections, runId);
    const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
      key: ctx.key,
    });
    assert.equal(cancel.status, 409);
    assert.equal(cancel.body.error.type, 'invalid_request_error');
    assert.equal(cancel.body.error.code, 'run_not_cancellable');
    const other = await ctx.newAccount();
    const foreign = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
      key: other.key,
    });
    assert.equal(foreign.status, 404);
    assert.ok(ctx.accountId);
  });
});
