/**
 * A run recorded by an API process that died before starting its workflow, on the real stack: a
 * read of it, once it is older than any start could take, ends it `failed`, billed nothing, its
 * hold given back (D17), and so do a stream's poller and, for one nobody reads, the hourly
 * housekeeping; a younger one is left `pending` (its start may still be under way). A run whose
 * live execution an operator deleted in Temporal looks the same to a process that never saw it
 * run: its end then says nothing ran only as one possibility.
 */
import assert from 'node:assert/strict';
import { CreditCheck } from '../../../api/limits/credit-check';
import {
  NEVER_STARTED_AFTER_MS,
  NEVER_STARTED_ERROR,
} from '../../../api/runs/settle-never-started';
import { accountCredit } from '../../../store/credit-holds';
import { deriveId, generateId } from '../../../store/ids';
import { insertRun } from '../../../store/runs';
import { RETENTION_WORKFLOW_TYPE } from '../../../workflows/definitions';
import { publish, rowsWorkflow } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { startRun } from '../../support/runs';
import { startPeerService, temporalClient } from '../../support/service';
import { events, openSse } from '../../support/sse';
import { pendingRun } from '../../support/store';
import { useService } from '../../support/use-service';

describe('a run whose start died before its workflow', function () {
  this.timeout(60_000);
  const ctx = useService({ credit: 5, fakeOpenAI: true });

  /** A run recorded as a start does (its hold reserved, its record written `ageMs` ago) whose workflow never started. */
  async function orphan(ageMs: number): Promise<string> {
    const c = ctx.svc.store.collections;
    const runId = generateId('run');
    const gate = new CreditCheck(c); // the process that died; its lease's rest goes back
    await gate.reserve(ctx.accountId, runId, 0.2);
    await gate.close();
    await insertRun(
      c,
      pendingRun({
        _id: runId,
        account_id: ctx.accountId,
        key_id: ctx.keyId,
        hold_usd: 0.2,
        created_at: new Date(Date.now() - ageMs),
      }),
    );
    return runId;
  }

  it('is ended `failed` by a read once it is old enough, billed nothing, its hold given back', async () => {
    const c = ctx.svc.store.collections;
    const runId = await orphan(NEVER_STARTED_AFTER_MS + 60_000);
    assert.equal((await accountCredit(c, ctx.accountId)).held_usd, 0.2);

    const read = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(read.status, 200);
    assert.equal(read.body.status, 'failed');
    assert.equal(read.body.error, NEVER_STARTED_ERROR);
    assert.equal(read.body.total_cost, 0);
    const entry = await c.ledger.findOne({ _id: deriveId('led', runId) });
    assert.equal(entry?.amount_usd, 0);
    assert.equal(entry?.released_usd, 0.2);
    assert.deepEqual(await accountCredit(c, ctx.accountId), {
      balance_usd: 5,
      held_usd: 0,
      available_usd: 5,
    });
    // Read again: the same end, one entry.
    const again = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(again.body.status, 'failed');
    assert.equal(await c.ledger.countDocuments({ run_id: runId }), 1);
  });

  it('is ended for a stream attached to it: created, then failed, then [DONE]', async () => {
    const runId = await orphan(NEVER_STARTED_AFTER_MS + 60_000);
    const stream = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream`, { key: ctx.key });
    assert.equal(stream.status, 200);
    await stream.closed;
    // The poller's first look ends the run: the stream opens on its end (D11's resumed event).
    assert.deepEqual(
      events(stream).map((e) => [e.sequence_number, e.type]),
      [
        [0, 'response.resumed'],
        [1, 'response.failed'],
      ],
    );
    assert.equal(events(stream)[0].response.status, 'failed');
    assert.equal(stream.frames.at(-1)?.data, '[DONE]');
    assert.equal((await accountCredit(ctx.svc.store.collections, ctx.accountId)).held_usd, 0);
  });

  it('is ended by the hourly housekeeping when nobody reads it (its caller never learned its id), a young one left', async () => {
    const c = ctx.svc.store.collections;
    const unread = await orphan(NEVER_STARTED_AFTER_MS + 60_000);
    const young = await orphan(60_000);
    // Before, only a read or a stream ended it: listed `pending` and its credit held for good.
    const result = await temporalClient(ctx.svc).workflow.execute(RETENTION_WORKFLOW_TYPE, {
      taskQueue: ctx.svc.config.temporal.taskQueue,
      workflowId: `retention-unstarted-${Date.now()}`,
      args: [],
    });
    assert.ok(result.unstarted >= 1, JSON.stringify(result));
    const ended = await c.runs.findOne({ _id: unread });
    assert.equal(ended?.status, 'failed');
    assert.equal(ended?.error, NEVER_STARTED_ERROR);
    assert.equal((await c.ledger.findOne({ _id: deriveId('led', unread) }))?.released_usd, 0.2);
    assert.equal((await c.runs.findOne({ _id: young }))?.status, 'pending');
    assert.equal((await accountCredit(c, ctx.accountId)).held_usd, 0.2, 'the young one holds');
  });

  it('is left `pending` while its start could still be under way', async () => {
    const runId = await orphan(60_000);
    const read = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(read.status, 200);
    assert.equal(read.body.status, 'pending');
    const record = await ctx.svc.store.collections.runs.findOne({ _id: runId });
    assert.equal(record?.finalized, false);
    assert.equal(await ctx.svc.store.collections.ledger.countDocuments({ run_id: runId }), 0);
  });

  it('is not what a run whose live execution was deleted in Temporal is taken for where it was seen running, and its end elsewhere does not say nothing ran', async () => {
    const { key } = await ctx.newAccount();
    await publish(ctx.svc.url, key, rowsWorkflow('deleted-live', '{{row}}', { concurrency: 2 }));
    const rows = ['answered one', 'hold:deleted-live two'];
    const runId = await startRun(ctx.svc.url, key, 'deleted-live', { rows });
    await waitFor(
      async () => {
        const live = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
        return live.body.status === 'running' &&
          ctx.fake.requestsWith('answered one').some((r) => r.answered)
          ? true
          : undefined;
      },
      { what: 'running, one row answered' },
    );
    // An operator deletes its execution (the Temporal UI's Delete, `temporal workflow delete`).
    const client = temporalClient(ctx.svc);
    await client.workflowService.deleteWorkflowExecution({
      namespace: ctx.svc.config.temporal.namespace,
      workflowExecution: { workflowId: runId },
    });
    await waitFor(
      async () =>
        (await client.workflow
          .getHandle(runId)
          .describe()
          .then(() => false)
          .catch(() => true)) || undefined,
      { what: 'the execution gone' },
    );
    ctx.fake.release('deleted-live');
    const c = ctx.svc.store.collections;
    const old = new Date(Date.now() - NEVER_STARTED_AFTER_MS - 60_000);
    await c.runs.updateOne({ _id: runId }, { $set: { created_at: old } });
    // The process that saw it run does not take it for a start that died.
    const here = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
    assert.notEqual(here.body.error, NEVER_STARTED_ERROR);
    assert.equal(await c.ledger.countDocuments({ run_id: runId }), 0);
    // Another one cannot tell it from one: it ends it so, and the error says what is known.
    const peer = await startPeerService(ctx.svc);
    let there: any;
    try {
      there = (await call(peer.url, 'GET', `/api/v1/runs/${runId}`, { key })).body;
    } finally {
      await peer.close();
    }
    assert.equal(there.status, 'failed');
    assert.equal(there.error, NEVER_STARTED_ERROR);
    assert.doesNotMatch(there.error, /nothing ran/i);
    assert.match(there.error, /deleted/);
  });
});
