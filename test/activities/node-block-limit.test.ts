/**
 * D36 max_cost: a block the cap shrank (`limit`, activities/node-block.ts) runs at most `limit`
 * rows in one ask, whatever Temporal's attempts of it: a worker's drain hands the attempt back
 * and the next one, which reads the pages, runs only what the ask has left. Run in Temporal's
 * activity test environment against a real database (FerretDB), each attempt as Temporal starts
 * it (its number, the heartbeat details the last one left).
 */
import assert from 'node:assert/strict';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { MockActivityEnvironment } from '@temporalio/testing';
import { createNodeBlockActivity } from '../../activities/node-block';
import type { RowExecutors } from '../../activities/node-chunk';
import type { NodeBlockRequest, NodeBlockResult } from '../../activities/types';
import { completed } from '../../domain/items';
import type { StoredRow } from '../../domain/item-blocks';
import { generateId } from '../../store/ids';
import { insertPages, readPage } from '../../store/item-blocks';
import { waitFor } from '../support/http';
import { useTestStore } from '../support/store';
import { activityEnv, drain, llmBlock } from '../support/activity-env';

const ROWS = 10;
const LIMIT = 4;

describe('a block max_cost shrank runs at most its limit across its attempts (D36)', function () {
  this.timeout(60_000);
  const db = useTestStore();

  /** An attempt's llm executor: rows `now` keeps answer at once, the others wait for the cancel. */
  function attempt(now: (row: number) => boolean) {
    const called: number[] = [];
    const llm = async (req: { iteration: number }) => {
      called.push(req.iteration);
      if (!now(req.iteration)) {
        const signal = Context.current().cancellationSignal;
        await new Promise<never>((_, reject) => {
          if (signal.aborted) reject(signal.reason as Error);
          signal.addEventListener('abort', () => reject(signal.reason as Error));
        });
      }
      return {
        items: [completed({ type: 'text', text: `row ${req.iteration}` })],
        costUsd: 0.001,
        tokens: { input: 100, output: 10 },
      };
    };
    const run = createNodeBlockActivity({ llm } as unknown as RowExecutors, db.store.collections);
    return { run, called };
  }

  const block = (runId: string, extra: Partial<NodeBlockRequest> = {}): NodeBlockRequest => ({
    ...llmBlock(runId, { accountId: 'acct_limit', rows: ROWS, concurrency: 2 }),
    limit: LIMIT,
    ...extra,
  });

  /** The last heartbeat details of the environment's attempt (what Temporal gives the next one). */
  function lastBeat(env: MockActivityEnvironment): () => unknown {
    let last: unknown;
    env.on('heartbeat', (details: unknown) => (last = details));
    return () => last;
  }

  const stored = (i: number): StoredRow => ({
    item: completed({ type: 'text', text: `row ${i} stored` }),
    cost: 0.001,
    u: [1, 100, 10],
  });

  it("the attempt after a drain runs only what the ask's limit leaves", async () => {
    const runId = generateId('run');
    // Attempt 1: rows 0 and 1 answer, 2 and 3 are in flight when the worker drains.
    const first = attempt((i) => i < 2);
    const firstEnv = activityEnv();
    const beat = lastBeat(firstEnv);
    const handedBack = firstEnv.run(first.run, block(runId)) as Promise<NodeBlockResult>;
    await waitFor(async () => first.called.length === LIMIT || undefined, {
      what: 'attempt 1 calls its 4 rows',
    });
    drain(firstEnv);
    await assert.rejects(handedBack, (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.type, 'WorkerShutdown');
      return true;
    });
    assert.deepEqual(first.called, [0, 1, 2, 3]);

    // Attempt 2, on another worker: 2 of the ask's 4 rows are stored, so it runs 2 (it ran 4).
    const second = attempt(() => true);
    const answer = (await activityEnv({ attempt: 2, heartbeatDetails: beat() }).run(
      second.run,
      block(runId),
    )) as NodeBlockResult;
    assert.deepEqual(second.called, [2, 3]);
    assert.equal(answer.done, LIMIT);

    // The workflow's next ask (`resumed`) is a new activity, with a limit of its own.
    const third = attempt(() => true);
    const resumed = (await activityEnv().run(
      third.run,
      block(runId, { resumed: true }),
    )) as NodeBlockResult;
    assert.deepEqual(third.called, [4, 5, 6, 7]);
    assert.equal(resumed.done, 2 * LIMIT);
  });

  it('a later attempt whose checkpoint has calls but no base runs only those rows; one with no checkpoint runs its limit', async () => {
    // An attempt of a worker that recorded no base made calls (its checkpoint counts row 3's):
    // how many rows it ran is unknown, but row 3 was in its queue, so the next attempt runs row 3
    // alone, not the first rows the pages lack.
    const runId = generateId('run');
    await insertPages(db.store.collections, runId, 'ask', [
      { page: 0, rows: Array.from({ length: ROWS }, (_, i) => (i < 2 ? stored(i) : null)) },
    ]);
    const unknown = attempt(() => true);
    const answer = (await activityEnv({ attempt: 2, heartbeatDetails: { calls: { 3: 1 } } }).run(
      unknown.run,
      block(runId),
    )) as NodeBlockResult;
    assert.deepEqual(unknown.called, [3]);
    assert.equal(answer.done, 3);
    assert.equal(answer.uncounted, undefined); // row 3's earlier call counts in its stored usage (D36)
    const page = await readPage(db.store.collections, runId, 'ask', 0);
    assert.deepEqual(page?.[3]?.u, [1, 100, 10, 1]);

    // No checkpoint at all: no earlier attempt is known to have run a row (it waited for a slot).
    const idle = attempt(() => true);
    const full = (await activityEnv({ attempt: 2 }).run(idle.run, block(runId))) as NodeBlockResult;
    assert.deepEqual(idle.called, [2, 4, 5, 6]);
    assert.equal(full.done, 3 + LIMIT);
  });

  it('a resumed ask handed back by a worker without base makes progress, and its later attempts stay within the limit', async () => {
    // The first ask (limit 4) stored rows 0–3: its answer is what the workflow counted (done 4).
    // The resumed ask's first attempt ran on the previous release (no base): it stored row 4, had
    // rows 5 (a call made) and 6 (a prediction's checkpoint) in flight, and was handed back by its
    // drain. Its next attempt, on this release, runs those two.
    const runId = generateId('run');
    await insertPages(db.store.collections, runId, 'ask', [
      { page: 0, rows: Array.from({ length: ROWS }, (_, i) => (i <= LIMIT ? stored(i) : null)) },
    ]);
    const second = attempt((i) => i === 5);
    const secondEnv = activityEnv({
      attempt: 2,
      heartbeatDetails: { calls: { 5: 1, 6: 1 }, 6: { id: 'pred_6' } },
    });
    const beat = lastBeat(secondEnv);
    const handedBack = secondEnv.run(
      second.run,
      block(runId, { resumed: true }),
    ) as Promise<NodeBlockResult>;
    await waitFor(async () => second.called.length === 2 || undefined, {
      what: 'attempt 2 calls rows 5 and 6',
    });
    assert.deepEqual([...second.called].sort(), [5, 6]);
    // Drained again with row 6 in flight: row 5 is stored, the ask has stored rows 4 and 5 (and
    // maybe two more the old attempt ran and stored nowhere it can tell), one row is left to it.
    drain(secondEnv);
    await assert.rejects(handedBack, (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.type, 'WorkerShutdown');
      return true;
    });

    const third = attempt(() => true);
    const answer = (await activityEnv({ attempt: 3, heartbeatDetails: beat() }).run(
      third.run,
      block(runId, { resumed: true }),
    )) as NodeBlockResult;
    assert.deepEqual(third.called, [6]);
    // More than the 4 the workflow counted: not "a block of rows made no progress".
    assert.equal(answer.done, 7);
  });
});
