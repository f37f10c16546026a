/**
 * D38: a completed big run's record lists the rows of each stored node that did not complete
 * (`stored_outputs.<label>.failed`), and its re-run of failed items runs blocks of those rows only
 * (one block for a node of at most 100,000 rows), carrying every other row by reference without
 * reading the parent's pages (workflows/carry-over.ts `onePlan`, `planBlocks`). Readers still see
 * every row in order. When the parent's carried rows read through a re-run that was deleted (D39),
 * the list is not trusted: the re-run reads the parent's pages and runs again what it can no
 * longer read.
 */
import assert from 'node:assert/strict';
import { publish, rowsWorkflow, waitForRun } from '../../support/fixtures';
import { call } from '../../support/http';
import { LLM_CALL_USD, PRICES, START_FEE_USD } from '../../support/execution';
import { resultsFile } from '../../support/files';
import { startRun } from '../../support/runs';
import { temporalClient } from '../../support/service';
import { useService } from '../../support/use-service';
import { money, rerunHelpers } from '../../support/reruns';
import { findRunRecord } from '../../../store/runs';

describe('a re-run of failed items runs the failed rows its parent’s record lists (D38)', function () {
  this.timeout(240_000);
  const ctx = useService({ fakeOpenAI: true, credit: 100, env: { PRICES } });

  const { rerun, pagedItems, storedPage } = rerunHelpers(ctx);
  /** The block activities a run scheduled, and whether it recorded the patch markers rerun-known-failed-rows and rerun-one-block. */
  const blocksOf = async (runId: string) => {
    const history = await temporalClient(ctx.svc).workflow.getHandle(runId).fetchHistory();
    const events = history.events ?? [];
    // The patch markers of this path (a run also records others).
    const markersOf = (id: string) =>
      events.filter((e) => {
        const marker = e.markerRecordedEventAttributes;
        const data = marker?.details?.['patch-data']?.payloads?.[0]?.data;
        return (
          marker?.markerName === 'core_patch' &&
          !!data &&
          JSON.parse(Buffer.from(data).toString()).id === id
        );
      }).length;
    return {
      blocks: events.filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runNodeBlock',
      ).length,
      markers: markersOf('rerun-known-failed-rows'),
      oneBlock: markersOf('rerun-one-block'),
    };
  };
  const failedOf = async (runId: string) =>
    (await findRunRecord(ctx.svc.store.collections, runId))?.stored_outputs?.answers?.failed;
  const texts = (items: any[]) =>
    items.map((i) => `${i.item_index}:${i.status}:${i.parts[0]?.text ?? ''}`);

  it('runs blocks of the listed rows only: a whole failed page, a page with one, pages with none', async () => {
    // 1,000 rows in 10 pages: page 3 fails whole, rows 5 and 750 alone; the other pages complete.
    const failing = [5, ...Array.from({ length: 100 }, (_, k) => 300 + k), 750];
    const set = new Set(failing);
    const rows = Array.from({ length: 1000 }, (_, i) =>
      set.has(i) ? `r${i} kf1 refuseonce:kf1r${i}` : `r${i} kf1`,
    );
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('rerun-known'));
    const parentId = await startRun(ctx.svc.url, ctx.key, 'rerun-known', { rows });
    const parent = await waitForRun(ctx.svc.url, ctx.key, parentId, 120_000);
    assert.equal(parent.status, 'completed');
    assert.deepEqual(await failedOf(parentId), failing, 'the record lists the failed rows');
    const parentItems = await pagedItems(parentId);

    const childId = await rerun(parentId);
    const child = await waitForRun(ctx.svc.url, ctx.key, childId, 120_000);
    assert.equal(child.status, 'completed');
    assert.equal(ctx.fake.requestsWith('kf1').length, 1000 + failing.length);
    assert.equal(child.total_cost, money(START_FEE_USD + failing.length * LLM_CALL_USD));
    // One block of all 10 pages runs the 102 listed rows (uniform blocks: 10; 16 lanes' plan: 2).
    assert.deepEqual(await blocksOf(childId), { blocks: 1, markers: 1, oneBlock: 1 });
    assert.deepEqual(await failedOf(childId), [], 'nothing failed this time');

    // The whole failed page holds new rows only; a page with one failed row references the rest;
    // a page with none is references only.
    const page3 = await storedPage(childId, 3);
    assert.equal(page3.base, undefined);
    page3.lines.forEach((line) => assert.match(line, /^[\d.e-]+(,\d+)* \{"status":"completed"/));
    const page0 = await storedPage(childId, 0);
    assert.equal(page0.base, parentId);
    page0.lines.forEach((line, k) =>
      k === 5 ? assert.notEqual(line, '^') : assert.equal(line, '^'),
    );
    const page1 = await storedPage(childId, 1);
    assert.equal(page1.base, parentId);
    assert.deepEqual(
      page1.lines,
      Array.from({ length: 100 }, () => '^'),
    );

    // Every reader sees every row in order, carried and new.
    const expected = parentItems.map((item, k) =>
      set.has(k)
        ? {
            ...item,
            status: 'completed',
            parts: [{ type: 'text', text: `echo: r${k} kf1 refuseonce:kf1r${k}` }],
          }
        : item,
    );
    assert.deepEqual(texts(await pagedItems(childId)), texts(expected));
    assert.deepEqual(
      texts(await resultsFile(ctx.svc.url, ctx.key, childId, 'answers')),
      texts(expected),
    );
    assert.deepEqual(texts(child.output.answers), texts(expected));
    assert.equal(child.usage.by_node.ask.provider_calls, failing.length);
    assert.equal(child.usage.by_node.ask.items_completed, 1000);
  });

  it('reads the parent’s pages instead when a run its rows read through was deleted (D39), and runs again what is gone', async () => {
    // Row 150 fails in the first three runs; row 5 in the first only.
    const rows = Array.from({ length: 300 }, (_, i) =>
      i === 5
        ? `r${i} kf2 refuseonce:kf2a`
        : i === 150
          ? `r${i} kf2 refusetimes:kf2b:3`
          : `r${i} kf2`,
    );
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('rerun-known-deleted'));
    const firstId = await startRun(ctx.svc.url, ctx.key, 'rerun-known-deleted', { rows });
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, firstId, 120_000)).status, 'completed');
    const secondId = await rerun(firstId);
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, secondId, 120_000)).status, 'completed');
    const thirdId = await rerun(secondId);
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, thirdId, 120_000)).status, 'completed');
    assert.deepEqual(await failedOf(thirdId), [150]);
    assert.equal(ctx.fake.requestsWith('kf2').length, 300 + 2 + 1);

    // The second run is deleted: the third's carried rows (all but 150) read through it, and are gone.
    const deleted = await call(ctx.svc.url, 'DELETE', `/api/v1/runs/${secondId}`, { key: ctx.key });
    assert.equal(deleted.status, 200);
    assert.deepEqual(
      (await pagedItems(thirdId)).map((i) => i.item_index),
      [150],
    );
    // Its re-run runs every row it cannot read (the inputs are the first run's, still there).
    const fourthId = await rerun(thirdId);
    const fourth = await waitForRun(ctx.svc.url, ctx.key, fourthId, 120_000);
    assert.equal(fourth.status, 'completed');
    assert.equal(ctx.fake.requestsWith('kf2').length, 300 + 2 + 1 + 300);
    const items = await pagedItems(fourthId);
    assert.equal(items.length, 300);
    items.forEach((item, k) => {
      assert.equal(item.item_index, k);
      assert.equal(item.status, 'completed', `row ${k}`);
    });
    const fourthBlocks = await blocksOf(fourthId);
    assert.equal(fourthBlocks.markers, 0, 'the old path: no list trusted');
    assert.equal(fourthBlocks.oneBlock, 0);
  });

  it('runs a max_cost re-run past a node whose rows all completed (before: "cost limit reached", nothing spent)', async () => {
    // Two branches of 200 rows; only row 5 of `ask` fails, `more` completes whole.
    const doc = {
      slug: 'rerun-branches',
      nodes: [
        { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'json' },
        { id: 'split', type: 'batch' },
        { id: 'ask', type: 'llm', model: 'gpt-test', prompt: '{{row}}' },
        { id: 'out', type: 'user_result', label: 'Answers' },
        { id: 'rows2', type: 'user_input', label: 'More rows', input_type: 'json' },
        { id: 'split2', type: 'batch' },
        { id: 'more', type: 'llm', model: 'gpt-test', prompt: '{{row}}' },
        { id: 'out2', type: 'user_result', label: 'More' },
      ],
      edges: [
        { from: 'rows', to: 'split', port: 'rows' },
        { from: 'split', to: 'ask', port: 'row' },
        { from: 'ask', to: 'out' },
        { from: 'rows2', to: 'split2', port: 'rows' },
        { from: 'split2', to: 'more', port: 'row' },
        { from: 'more', to: 'out2' },
      ],
    };
    await publish(ctx.svc.url, ctx.key, doc);
    const rows = Array.from({ length: 200 }, (_, i) =>
      i === 5 ? `r${i} kf3 refuseonce:kf3r${i}` : `r${i} kf3`,
    );
    const rows2 = rows.map((_, i) => `m${i} kf3m`);
    const parentId = await startRun(
      ctx.svc.url,
      ctx.key,
      'rerun-branches',
      { rows, more_rows: rows2 },
      { body: { max_cost: 10 } },
    );
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, parentId, 120_000)).status, 'completed');

    const childId = await rerun(parentId);
    const child = await waitForRun(ctx.svc.url, ctx.key, childId, 120_000);
    assert.equal(child.status, 'completed', child.error);
    assert.equal(child.total_cost, money(START_FEE_USD + LLM_CALL_USD));
    assert.equal(ctx.fake.requestsWith('kf3m').length, 200, '`more` ran no call again');
    assert.equal(ctx.fake.requestsWith('kf3r5').length, 2);
  });
});
