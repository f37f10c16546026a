/**
 * A run whose workflow an operator terminated (the Temporal UI, `temporal workflow terminate`) is
 * settled by the API's next read (api/runs/settle-run.ts) as its own failed end would have been:
 * billed for every row stored, also those of a block still running at the terminate (it stores
 * them as it stops, after the close), and keeping the items it finished at their rows, so a re-run
 * of its failed items (D38) neither carries rows nobody paid for nor calls paid ones again.
 */
import assert from 'node:assert/strict';
import { pageId } from '../../../domain/item-blocks';
import { deriveId } from '../../../store/ids';
import { publish, rowsWorkflow, waitForRun } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { startRun } from '../../support/runs';
import { money, rerunHelpers } from '../../support/reruns';
import { startPeerService, temporalClient } from '../../support/service';
import { useService } from '../../support/use-service';

const PRICES = { 'gpt-test': { input_per_mtok: 10, output_per_mtok: 20 } }; // $0.002 a call
const CALL = 0.002;
const FEE = 0.001;

describe('settling a run terminated from outside (api/runs/settle-run.ts)', function () {
  this.timeout(180_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: { PRICES: JSON.stringify(PRICES), START_FEE_USD: String(FEE) },
  });
  const { rerun, pagedItems } = rerunHelpers(ctx);
  const terminate = (runId: string) =>
    temporalClient(ctx.svc).workflow.getHandle(runId).terminate('an operator stopped it');

  it('bills the rows a block in flight stored after the terminate, and a re-run carries them paid (before: $0.012 for 10 rows)', async () => {
    // 10 rows at concurrency 2: a big run (D35), one block of one page, 5 rows answered, 2 held.
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('settle-big', '{{row}}', { concurrency: 2 }));
    const rows = [
      ...Array.from({ length: 5 }, (_, i) => `fast ${i}`),
      ...Array.from({ length: 5 }, (_, i) => `hold:settle-big held ${i + 5}`),
    ];
    const runId = await startRun(ctx.svc.url, ctx.key, 'settle-big', { rows });
    await waitFor(
      async () =>
        ctx.fake.requestsWith('fast 4').some((r) => r.answered) &&
        ctx.fake.requestsWith('hold:settle-big').length >= 2
          ? true
          : undefined,
      { what: 'the fast rows answered, two held rows in flight', timeoutMs: 60_000 },
    );
    await terminate(runId);
    // The first read after it, by an API process that never saw the run (a cold read): it joins
    // the settle, which waits for the block's last write, and answers the settled run.
    const peer = await startPeerService(ctx.svc);
    let first: any;
    try {
      first = (await call(peer.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key })).body;
    } finally {
      await peer.close();
    }
    const c = ctx.svc.store.collections;
    // Stored by the block as it stopped, about a second after the terminate.
    await waitFor(
      async () =>
        (await c.itemBlocks.findOne({ _id: pageId(runId, 'ask', 0) })) ? true : undefined,
      { what: 'the block in flight stored its page' },
    );
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(run.status, 'failed');
    assert.match(run.error, /terminated/);
    assert.equal(run.total_cost, money(FEE + 5 * CALL), 'the 5 stored rows are billed');
    assert.equal(run.usage.provider_calls, 5);
    assert.equal(run.usage.by_node.ask.items_completed, 5);
    assert.deepEqual(
      [first.status, first.total_cost],
      ['failed', run.total_cost],
      'the first read answered the settled run',
    );
    const debit = await c.ledger.findOne({ _id: deriveId('led', runId) });
    assert.equal(debit?.amount_usd, -money(FEE + 5 * CALL));
    const kept = await pagedItems(runId);
    assert.deepEqual(
      kept.map((item: any) => [item.item_index, item.status]),
      [0, 1, 2, 3, 4].map((i) => [i, 'completed']),
    );

    ctx.fake.release('settle-big');
    const childId = await rerun(runId);
    const child = await waitForRun(ctx.svc.url, ctx.key, childId, 60_000);
    assert.equal(child.status, 'completed');
    const items = await pagedItems(childId);
    assert.equal(items.filter((item: any) => item.status === 'completed').length, 10);
    assert.equal(
      money(run.total_cost + child.total_cost),
      money(2 * FEE + 10 * CALL),
      'ten rows delivered, ten billed',
    );
  });

  it('keeps the items a small run finished at their rows, so a re-run of its failed items does not call them again (before: billed twice)', async () => {
    // 4 rows at concurrency 4: a small run (its items in the workflow); rows 1 and 3 answer.
    await publish(
      ctx.svc.url,
      ctx.key,
      rowsWorkflow('settle-small', '{{row}}', { concurrency: 4 }),
    );
    const rows = ['hold:settle-small a', 'fast b', 'hold:settle-small c', 'fast d'];
    const runId = await startRun(ctx.svc.url, ctx.key, 'settle-small', { rows });
    await waitFor(
      async () => {
        const live = (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key }))
          .body;
        return live.total_cost >= money(FEE + 2 * CALL) &&
          ctx.fake.requestsWith('hold:settle-small').length === 2
          ? true
          : undefined;
      },
      { what: 'two rows counted, two held', timeoutMs: 60_000 },
    );
    await terminate(runId);
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 60_000);
    assert.equal(run.status, 'failed');
    assert.equal(run.total_cost, money(FEE + 2 * CALL));
    assert.equal(run.output, null, 'a failed run shows no output (D9)');
    const kept = await pagedItems(runId);
    assert.deepEqual(
      kept.map((item: any) => [item.item_index, item.status, item.parts[0]?.text !== undefined]),
      [
        [1, 'completed', true],
        [3, 'completed', true],
      ],
      'the finished items, at their rows',
    );

    ctx.fake.release('settle-small');
    const fastCalls = ctx.fake.requestsWith('fast ').length;
    const childId = await rerun(runId);
    const child = await waitForRun(ctx.svc.url, ctx.key, childId, 60_000);
    assert.equal(child.status, 'completed');
    assert.deepEqual(
      child.output.answers.map((item: any) => [item.item_index, item.status]),
      [0, 1, 2, 3].map((i) => [i, 'completed']),
    );
    assert.equal(
      ctx.fake.requestsWith('fast ').length,
      fastCalls,
      'the paid rows were not called again',
    );
    assert.equal(child.total_cost, money(FEE + 2 * CALL));
  });
});
