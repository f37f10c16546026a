/**
 * Two attempts of one block alive at once (activities/node-block.ts): an operator's reset of a
 * run mid-block starts the block anew while the old execution's attempt runs on until its
 * heartbeat finds it gone and its cancel writes its half-done page; a stalled worker's attempt
 * outlives its heartbeat timeout the same way. Run in Temporal's activity test environment
 * against a real database (FerretDB), the two attempts write the same page in the order that lost
 * rows: whichever writes last, every row the accepted attempt bills is stored and readable, and
 * its answer is what the stored page holds (what tallyBlock counts), and counts (D36) its own calls
 * of the rows whose copy lost the merge, unbilled.
 */
import assert from 'node:assert/strict';
import { Context } from '@temporalio/activity';
import { MongoNetworkError } from 'mongodb';
import { createNodeBlockActivity, createTallyBlockActivity } from '../../activities/node-block';
import type { RowExecutors } from '../../activities/node-chunk';
import type { NodeBlockRequest, NodeBlockResult } from '../../activities/types';
import { completed } from '../../domain/items';
import { itemLength, pageId, type StoredRow } from '../../domain/item-blocks';
import { generateId } from '../../store/ids';
import { insertPages, readPage } from '../../store/item-blocks';
import { waitFor } from '../support/http';
import { useTestStore } from '../support/store';
import { activityEnv, llmBlock } from '../support/activity-env';

const ROWS = 10;

/** What the new attempt's own calls of rows 0–4 count when the old attempt's copies of them were kept (D36). */
const FIVE_ROWS_CALLS = { calls: 5, input_tokens: 5 * 100, output_tokens: 5 * 10, failed_calls: 0 };

describe('block attempts alive at once: the bill is what the pages hold (D35)', function () {
  this.timeout(60_000);
  const db = useTestStore();

  /**
   * One attempt's llm executor: a row `now` keeps answers at once, the others when `open()` is
   * called (or fail when the attempt is cancelled). Every answer costs `cost`.
   */
  function attempt(
    cost: number,
    now: (row: number) => boolean,
    collections = db.store.collections,
  ) {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const called = new Set<number>();
    const answered = new Set<number>();
    const llm = async (req: { iteration: number }) => {
      called.add(req.iteration);
      if (!now(req.iteration)) {
        const signal = Context.current().cancellationSignal;
        const cancelled = new Promise<never>((_, reject) => {
          if (signal.aborted) reject(signal.reason as Error);
          signal.addEventListener('abort', () => reject(signal.reason as Error));
        });
        await Promise.race([gate, cancelled]);
      }
      answered.add(req.iteration);
      return {
        items: [completed({ type: 'text', text: `row ${req.iteration} at ${cost}` })],
        costUsd: cost,
        tokens: { input: 100, output: 10 },
      };
    };
    const run = createNodeBlockActivity({ llm } as unknown as RowExecutors, collections);
    return { run, called, answered, open };
  }

  const block = (runId: string): NodeBlockRequest =>
    llmBlock(runId, { accountId: 'acct_attempts', rows: ROWS, concurrency: 2 });

  /** What the block's stored page holds, as the workflow bills an unanswered block (tallyBlock). */
  async function storedAnswer(runId: string): Promise<NodeBlockResult> {
    const tally = createTallyBlockActivity(db.store.collections);
    return (await activityEnv().run(tally, {
      runId,
      nodeId: 'ask',
      first: 0,
      count: ROWS,
    })) as NodeBlockResult;
  }

  const billed = ({ done, ranges, costUsd, usage }: NodeBlockResult) => ({
    done,
    ranges,
    costUsd,
    usage,
  });

  /**
   * The old attempt answers the rows `oldNow` keeps (at 0.25 each) and waits on the rest; the new
   * one (at `freshCost` each: 0.25 answers what the old one does, a deterministic model) starts
   * once those are answered and reads the pages as they are then. Answers both attempts, their
   * environments and the run.
   */
  async function twoAttempts(
    runId: string,
    oldNow: (row: number) => boolean,
    oldRows: number,
    freshCost = 0.5,
  ) {
    const old = attempt(0.25, oldNow);
    const oldEnv = activityEnv();
    const oldAnswer = oldEnv.run(old.run, block(runId)) as Promise<NodeBlockResult>;
    await waitFor(
      async () => (old.answered.size === oldRows && old.called.size > oldRows) || undefined,
      { what: 'the old attempt answered its rows and waits on the next' },
    );
    const fresh = attempt(freshCost, () => false);
    const freshAnswer = activityEnv().run(fresh.run, block(runId)) as Promise<NodeBlockResult>;
    // Its rows are called once it has read the block's pages.
    await waitFor(async () => fresh.called.size > 0 || undefined, {
      what: 'the new attempt runs its rows',
    });
    return { old, oldEnv, oldAnswer, fresh, freshAnswer };
  }

  /** D19: the block's count in the storage quota is what its page holds, whichever attempt recorded last. */
  async function assertUsageIsStored(runId: string): Promise<void> {
    const page = await readPage(db.store.collections, runId, 'ask', 0);
    const held = (page ?? []).reduce((sum, row) => sum + (row ? itemLength(row.item) : 0), 0);
    const usage = await db.store.collections.itemUsage.findOne({ _id: pageId(runId, 'ask', 0) });
    assert.equal(usage?.bytes, held, 'item_usage counts what the page holds');
  }

  it("a page the old attempt inserted first takes the new attempt's rows: all of them readable, billed as stored", async () => {
    const runId = generateId('run');
    const { oldEnv, oldAnswer, fresh, freshAnswer } = await twoAttempts(runId, (i) => i < 5, 5);
    // The reset's old attempt is cancelled and writes its half-done page first.
    oldEnv.cancel();
    const cancelled = await oldAnswer;
    assert.equal(cancelled.cancelled, true);
    assert.equal(cancelled.done, 5);
    assert.equal(
      (await readPage(db.store.collections, runId, 'ask', 0))?.filter(Boolean).length,
      5,
    );

    fresh.open();
    const answer = await freshAnswer;
    const page = await readPage(db.store.collections, runId, 'ask', 0);
    assert.deepEqual(
      page?.map((row) => row?.item.status ?? 'missing'),
      Array.from({ length: ROWS }, () => 'completed'),
      'every billed row is readable',
    );
    assert.equal(answer.done, ROWS);
    // Rows 0–4 as the old attempt stored them, 5–9 as the new one ran them.
    assert.equal(answer.costUsd, 5 * 0.25 + 5 * 0.5);
    assert.deepEqual(billed(answer), billed(await storedAnswer(runId)));
    // D36: the stored rows count the old attempt's calls of rows 0–4; the new one's calls of them
    // (their copies lost the merge) are counted too, never billed.
    assert.deepEqual(answer.uncounted, FIVE_ROWS_CALLS);
    await assertUsageIsStored(runId);
  });

  it("a deterministic model's identical copies: the new attempt's calls of the rows the old one stored are counted too", async () => {
    const runId = generateId('run');
    // Both attempts answer every row alike (text, cost, tokens): the copies are byte for byte equal.
    const { old, oldEnv, oldAnswer, fresh, freshAnswer } = await twoAttempts(
      runId,
      (i) => i < 5,
      5,
      0.25,
    );
    oldEnv.cancel();
    assert.equal((await oldAnswer).done, 5);
    fresh.open();
    const answer = await freshAnswer;
    assert.equal(answer.done, ROWS);
    assert.equal(answer.costUsd, ROWS * 0.25);
    assert.deepEqual(billed(answer), billed(await storedAnswer(runId)));
    // The provider saw the old attempt's calls of rows 0–4 (and of the row it was cancelled on)
    // and the new one's of all ten: the stored rows count ten, `uncounted` the new one's five of
    // rows 0–4 (before: none, so the usage said 10 of the 15 answered calls).
    assert.deepEqual([...fresh.called].sort(), [...Array(ROWS).keys()]);
    assert.equal(old.answered.size, 5);
    assert.deepEqual(answer.uncounted, FIVE_ROWS_CALLS);
    await assertUsageIsStored(runId);
  });

  it("a write whose answer was lost finds the attempt's own rows stored: they are its copies", async () => {
    // The store applies the page's insert but the answer never comes back (a connection reset):
    // waitingForStore inserts again, finds the page and merges with it (BlockProgress.kept).
    const runId = generateId('run');
    const real = db.store.collections;
    let inserts = 0;
    const itemBlocks = new Proxy(real.itemBlocks, {
      get(target, key) {
        if (key === 'insertMany')
          return async (...args: Parameters<typeof target.insertMany>) => {
            inserts++;
            const result = await target.insertMany(...args); // again: a duplicate key
            if (inserts > 1) return result;
            throw new MongoNetworkError('connection reset after the write');
          };
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
    const only = attempt(0.25, () => true, { ...real, itemBlocks });
    const answer = (await activityEnv().run(only.run, block(runId))) as NodeBlockResult;
    assert.equal(inserts, 2, 'the insert was tried again');
    assert.equal(answer.done, ROWS);
    assert.equal(answer.usage?.calls, ROWS);
    assert.equal(answer.uncounted, undefined, "its own rows' calls are counted once");
  });

  it('an old attempt that writes after the accepted one adds nothing and drops nothing', async () => {
    const runId = generateId('run');
    // An earlier attempt stored rows 0 and 1 in an incomplete page: both attempts replace it.
    const earlier = (i: number): StoredRow => ({
      item: completed({ type: 'text', text: `row ${i} earlier` }),
      cost: 0.5,
      u: [1, 100, 10],
    });
    await insertPages(db.store.collections, runId, 'ask', [
      {
        page: 0,
        rows: Array.from({ length: ROWS }, (_, i) => (i < 2 ? earlier(i) : null)),
      },
    ]);
    const { oldEnv, oldAnswer, fresh, freshAnswer } = await twoAttempts(runId, (i) => i < 5, 3);
    fresh.open();
    const answer = await freshAnswer;
    assert.equal(answer.done, ROWS);
    assert.equal(answer.costUsd, ROWS * 0.5);
    assert.equal(answer.uncounted, undefined, 'the rows it read stored are its own copies');
    // The old attempt learns of it late and writes its page (rows 0–4) after.
    oldEnv.cancel();
    assert.equal((await oldAnswer).cancelled, true);
    const page = await readPage(db.store.collections, runId, 'ask', 0);
    assert.deepEqual(
      page?.map((row) => row?.item.status ?? 'missing'),
      Array.from({ length: ROWS }, () => 'completed'),
      'every billed row is readable',
    );
    assert.deepEqual(billed(answer), billed(await storedAnswer(runId)));
    await assertUsageIsStored(runId);
  });
});
