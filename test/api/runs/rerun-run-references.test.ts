/**
 * D38/D39: a re-run of failed items references its parent's data instead of copying it: its
 * record names the run holding its inputs (`inputs_from`), and its stored pages hold only the rows
 * it ran, a carried row being a reference to the parent's page (store/item-blocks.ts). Every reader
 * follows the references: the paged outputs, the results file, the run view, and a re-run of the
 * re-run. Deleting the parent erases what it holds for its re-runs too: the rows they carried and
 * the inputs they referenced are no longer readable (privacy first), while the rows a re-run ran
 * itself stay its own.
 */
import assert from 'node:assert/strict';
import { publish, rowsWorkflow, waitForRun } from '../../support/fixtures';
import { call } from '../../support/http';
import { expectError } from '../../support/api-assert';
import { LLM_CALL_USD, PRICES, START_FEE_USD } from '../../support/execution';
import { resultsFile } from '../../support/files';
import { startRun } from '../../support/runs';
import { useService } from '../../support/use-service';
import { money, rerunHelpers } from '../../support/reruns';
import { findRunRecord } from '../../../store/runs';

describe('a re-run references its parent’s rows and inputs (D38); deleting the parent erases them (D39)', function () {
  this.timeout(240_000);
  const ctx = useService({ fakeOpenAI: true, credit: 100, env: { PRICES } });

  const { rerun, pagedItems, storedPage } = rerunHelpers(ctx);
  const texts = (items: any[]) =>
    items.map((i) => `${i.item_index}:${i.status}:${i.parts[0]?.text ?? ''}`);

  it('carries rows by reference through a re-run of a re-run, readable in order everywhere, and a deleted parent takes its rows and inputs along', async () => {
    // Row 5 fails in the parent only; row 150 in the parent and in its re-run (300 rows: stored pages, D35).
    const rows = Array.from({ length: 300 }, (_, i) =>
      i === 5
        ? `r${i} rf1 refuseonce:rf1a`
        : i === 150
          ? `r${i} rf1 refusetimes:rf1b:2`
          : `r${i} rf1`,
    );
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('rerun-refs'));
    const parentId = await startRun(ctx.svc.url, ctx.key, 'rerun-refs', { rows });
    const parent = await waitForRun(ctx.svc.url, ctx.key, parentId, 120_000);
    assert.equal(parent.status, 'completed');
    const parentItems = await pagedItems(parentId);
    assert.deepEqual(
      parentItems.flatMap((i, k) => (i.status === 'failed' ? [k] : [])),
      [5, 150],
    );

    const childId = await rerun(parentId);
    const child = await waitForRun(ctx.svc.url, ctx.key, childId, 120_000);
    assert.equal(child.status, 'completed');
    assert.equal(
      child.total_cost,
      money(START_FEE_USD + LLM_CALL_USD),
      'two rows ran; the refused one costs nothing',
    );
    // The child stores references, not copies: its record holds no inputs, its page 0 holds only row 5.
    const childDoc = await findRunRecord(ctx.svc.store.collections, childId);
    assert.equal(childDoc?.inputs_from, parentId);
    assert.deepEqual(childDoc?.inputs, {});
    const page0 = await storedPage(childId, 0);
    assert.equal(page0.base, parentId);
    assert.equal(page0.lines.length, 100);
    page0.lines.forEach((line, k) => {
      if (k === 5) assert.match(line, /^[\d.e-]+(,\d+)* \{"status":"completed".*echo: r5 rf1/);
      else assert.equal(line, '^', `row ${k} is a reference`);
    });
    const childItems = await pagedItems(childId);
    assert.equal(childItems.length, 300);
    childItems.forEach((item, k) => {
      assert.equal(item.item_index, k);
      assert.equal(item.status, k === 150 ? 'failed' : 'completed', `row ${k}`);
      if (k !== 5 && k !== 150) assert.deepEqual(item.parts, parentItems[k].parts, `row ${k}`);
    });
    assert.equal(childItems[5].parts[0].text, 'echo: r5 rf1 refuseonce:rf1a');

    // A re-run of the re-run: row 150 runs; everything else is carried, through the child to the parent.
    const grandId = await rerun(childId);
    const grand = await waitForRun(ctx.svc.url, ctx.key, grandId, 120_000);
    assert.equal(grand.status, 'completed');
    assert.equal(grand.parent_run_id, childId);
    assert.equal(grand.total_cost, money(START_FEE_USD + LLM_CALL_USD), 'one row ran');
    assert.equal(ctx.fake.requestsWith('rf1').length, 300 + 2 + 1, 'no carried row was called');
    assert.equal(
      (await ctx.svc.store.collections.runs.findOne({ _id: grandId }))?.inputs_from,
      parentId,
      'the inputs are referenced at the run that holds them, one hop',
    );
    assert.equal((await storedPage(grandId, 1)).base, childId);
    const expected = parentItems.map((item, k) =>
      k === 5
        ? childItems[5]
        : k === 150
          ? {
              ...item,
              status: 'completed',
              parts: [{ type: 'text', text: 'echo: r150 rf1 refusetimes:rf1b:2' }],
            }
          : item,
    );
    const grandItems = await pagedItems(grandId);
    assert.deepEqual(texts(grandItems), texts(expected));
    // The results file (JSON Lines) and the run view read the same references.
    assert.deepEqual(
      texts(await resultsFile(ctx.svc.url, ctx.key, grandId, 'answers')),
      texts(expected),
    );
    assert.deepEqual(texts(grand.output.answers), texts(expected));
    // D36 usage counts what ran: one call, every row completed.
    assert.equal(grand.usage.by_node.ask.provider_calls, 1);
    assert.equal(grand.usage.by_node.ask.items_completed, 300);

    // D39: deleting the parent erases its rows and inputs for its re-runs too.
    const deleted = await call(ctx.svc.url, 'DELETE', `/api/v1/runs/${parentId}`, { key: ctx.key });
    assert.equal(deleted.status, 200);
    // The child keeps the rows it ran itself (5 and 150), and nothing of the parent's.
    const childAfter = await pagedItems(childId);
    assert.deepEqual(
      childAfter.map((i) => [i.item_index, i.status]),
      [
        [5, 'completed'],
        [150, 'failed'],
      ],
    );
    assert.deepEqual(
      (await resultsFile(ctx.svc.url, ctx.key, childId, 'answers')).map((i) => i.item_index),
      [5, 150],
    );
    const childView = await call(ctx.svc.url, 'GET', `/api/v1/runs/${childId}`, { key: ctx.key });
    assert.equal(childView.status, 200);
    assert.deepEqual(
      childView.body.output.answers.map((i: any) => i.item_index),
      [5, 150],
    );
    // The grandchild keeps its own row 150 and the child's row 5 (which it carried from the child).
    assert.deepEqual(texts(await pagedItems(grandId)), texts([expected[5], expected[150]]));
    // Their inputs went with the parent: neither can be re-run.
    for (const runId of [childId, grandId])
      expectError(
        await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/rerun`, {
          key: ctx.key,
          body: { items: 'failed' },
        }),
        { status: 409, type: 'invalid_request_error', code: 'run_inputs_erased' },
      );
  });
});
