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
import { insertPages } from '../../store/item-blocks';
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

  it('a later attempt whose checkpoint has calls but no base runs none; one with no checkpoint runs its limit', async () => {
    // An attempt of a worker that recorded no base made calls (its checkpoint counts row 2's):
    // what it ran is unknown, so the next attempt runs nothing and answers what is stored.
    const runId = generateId('run');
    await insertPages(db.store.collections, runId, 'ask', [
      { page: 0, rows: Array.from({ length: ROWS }, (_, i) => (i < 2 ? stored(i) : null)) },
    ]);
    const unknown = attempt(() => true);
    const answer = (await activityEnv({ attempt: 2, heartbeatDetails: { calls: { 2: 1 } } }).run(
      unknown.run,
      block(runId),
    )) as NodeBlockResult;
    assert.deepEqual(unknown.called, []);
    assert.equal(answer.done, 2);
    assert.equal(answer.uncounted?.failed_calls, 1); // row 2's call still counts (D36)

    // No checkpoint at all: no earlier attempt is known to have run a row (it waited for a slot).
    const idle = attempt(() => true);
    const full = (await activityEnv({ attempt: 2 }).run(idle.run, block(runId))) as NodeBlockResult;
    assert.deepEqual(idle.called, [2, 3, 4, 5]);
    assert.equal(full.done, 2 + LIMIT);
  });
});
