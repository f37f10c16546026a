/**
 * The activities of list nodes over a stored list (activities/stored-lists.ts), run in Temporal's
 * activity test environment against a real database (FerretDB): a run's cancel (D8) stops a join
 * or a batch at its next heartbeat instead of after the last page, a worker's drain hands the
 * attempt back, and a batch stops at the rows a list may have (D31).
 */
import assert from 'node:assert/strict';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { ActivityCancellationDetails } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createStoredListActivities } from '../../activities/stored-lists';
import { completed } from '../../domain/items';
import type { Item } from '../../domain/parts';
import type { ItemRef } from '../../domain/item-blocks';
import { readPage } from '../../store/item-blocks';
import { generateId } from '../../store/ids';
import { PageWriter } from '../../store/page-writer';
import { useTestStore } from '../support/store';
import { activityEnv } from '../support/activity-env';

/** Rows in the list: 30 pages, so a read of every page takes four batches of eight. */
const ROWS = 3_000;

describe('stored-list activities: cancels, drains and limits (D35)', function () {
  this.timeout(60_000);
  const db = useTestStore();

  /** A stored list of ROWS text rows (`row <i>\nmore <i>`: two lines each) under a new run. */
  async function storedList(): Promise<{ runId: string; list: ItemRef }> {
    const runId = generateId('run');
    const pages = new PageWriter(db.store.collections, runId, 'ask');
    for (let i = 0; i < ROWS; i++)
      await pages.add({ item: completed({ type: 'text', text: `row ${i}\nmore ${i}` }), cost: 0 });
    return { runId, list: { ref: 'ask', count: await pages.end() } };
  }

  const activities = () => createStoredListActivities(db.store.collections);
  /** Runs an activity in the environment, typed as the activity is. */
  const runIn = <A, R>(env: MockActivityEnvironment, activity: (req: A) => Promise<R>, req: A) =>
    env.run(activity, req) as Promise<R>;
  const joinNode = { id: 'all', type: 'join' as const, separator: '|' };

  it('joins and splits the whole list when nothing stops them (the control)', async () => {
    const { runId, list } = await storedList();
    const env = activityEnv();
    let beats = 0;
    env.on('heartbeat', () => beats++);
    const [joined] = (await runIn(env, activities().joinStoredItems, {
      runId,
      node: joinNode,
      list,
      sourceId: 'ask',
      storeLarge: true,
    })) as Item[]; // small: handed back
    assert.equal(joined.parts.length, 1);
    const text = (joined.parts[0] as { text: string }).text;
    assert.equal(text.split('|').length, ROWS);
    assert.ok(beats >= 4, `a heartbeat a batch of pages (${beats})`);

    const { count } = await runIn(env, activities().batchStoredRows, {
      runId,
      nodeId: 'again',
      list,
      maxRows: 1_000_000,
    });
    assert.equal(count, 2 * ROWS);
    const last = await readPage(db.store.collections, runId, 'again', (2 * ROWS) / 100 - 1);
    assert.deepEqual(last?.at(-1)?.item.parts, [{ type: 'text', text: `more ${ROWS - 1}` }]);
  });

  for (const name of ['joinStoredItems', 'batchStoredRows'] as const) {
    it(`${name}: a run's cancel stops it at the next heartbeat, not after the last page`, async () => {
      const { runId, list } = await storedList();
      const env = activityEnv();
      let beats = 0;
      env.on('heartbeat', () => {
        if (++beats === 1) env.cancel(); // the run's cancel arrives in the first heartbeat's answer
      });
      const work =
        name === 'joinStoredItems'
          ? runIn(env, activities().joinStoredItems, {
              runId,
              node: joinNode,
              list,
              sourceId: 'ask',
            })
          : runIn(env, activities().batchStoredRows, {
              runId,
              nodeId: 'again',
              list,
              maxRows: 1e6,
            });
      await assert.rejects(work, (err: unknown) => {
        assert.ok(err instanceof CancelledFailure, String(err));
        assert.equal(err.message, 'the run was cancelled');
        return true;
      });
      assert.ok(beats <= 2, `stopped within a batch of pages (${beats} heartbeats)`);
      if (name === 'batchStoredRows')
        assert.equal(
          await readPage(db.store.collections, runId, 'again', (2 * ROWS) / 100 - 1),
          null,
          'the last page of the batch was never written',
        );
    });
  }

  it("a worker's drain hands a join back to another worker (retryable), not the run's cancel", async () => {
    const { runId, list } = await storedList();
    const env = activityEnv();
    env.on('heartbeat', () =>
      env.cancel('WORKER_SHUTDOWN', new ActivityCancellationDetails({ workerShutdown: true })),
    );
    await assert.rejects(
      runIn(env, activities().joinStoredItems, { runId, node: joinNode, list, sourceId: 'ask' }),
      (err: unknown) => {
        assert.ok(err instanceof ApplicationFailure, String(err));
        assert.equal(err.type, 'WorkerShutdown');
        assert.equal(err.nonRetryable, false);
        return true;
      },
    );
  });

  it('keeps a joined item past 1 MiB in the store as the join’s one-row list; refuses it past 8 MiB, and past 1 MiB for workflow code from before', async () => {
    const runId = generateId('run');
    const row = 'y'.repeat(100 * 1024);
    const pages = new PageWriter(db.store.collections, runId, 'wide');
    for (let i = 0; i < 90; i++)
      await pages.add({ item: completed({ type: 'text', text: row }), cost: 0 });
    await pages.end();
    const env = activityEnv();
    const join = (count: number, storeLarge?: boolean) =>
      runIn(env, activities().joinStoredItems, {
        runId,
        node: joinNode,
        list: { ref: 'wide', count },
        sourceId: 'wide',
        ...(storeLarge ? { storeLarge } : {}),
      });

    assert.deepEqual(await join(12, true), { ref: 'all', count: 1 });
    const [stored] = (await readPage(db.store.collections, runId, 'all', 0)) ?? [];
    const text = (stored?.item.parts[0] as { text: string }).text;
    assert.equal(text.length, 12 * row.length + 11, 'twelve rows and their separators');

    const tooLarge = (mib: number) => (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure, String(err));
      assert.equal(err.type, 'JoinTooLarge');
      assert.equal(err.nonRetryable, true);
      assert.match(err.message, new RegExp(`^the joined item would be larger than ${mib} MiB`));
      return true;
    };
    await assert.rejects(join(12), tooLarge(1), 'a request without storeLarge');
    await assert.rejects(join(90, true), tooLarge(8));
  });

  it('a batch stops at the rows a list may have, naming the limit', async () => {
    const { runId, list } = await storedList();
    const env = activityEnv();
    await assert.rejects(
      runIn(env, activities().batchStoredRows, { runId, nodeId: 'again', list, maxRows: 250 }),
      (err: unknown) => {
        assert.ok(err instanceof ApplicationFailure, String(err));
        assert.equal(err.type, 'TooManyRows');
        assert.equal(err.nonRetryable, true);
        assert.match(err.message, /^has more than 250 rows; a run takes at most 1000000 per list/);
        return true;
      },
    );
  });
});
