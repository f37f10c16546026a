/**
 * A big node's row waiting for its next call (a provider's `Retry-After`, activities/row-retries.ts)
 * keeps its wait across Temporal's attempts of its block (activities/node-block.ts): the attempt
 * after a worker's drain or death waits what is left of it before calling the row again, and a
 * cancel still ends that wait at once. Run in Temporal's activity test environment against a real
 * database (FerretDB), each attempt as Temporal starts it (its number, retry policy, and the
 * heartbeat details the last one left).
 */
import assert from 'node:assert/strict';
import type { Info } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/activity';
import { providerFailure } from '../../activities/failures';
import { createNodeBlockActivity } from '../../activities/node-block';
import type { RowExecutors } from '../../activities/node-chunk';
import type { NodeBlockRequest, NodeBlockResult } from '../../activities/types';
import { completed } from '../../domain/items';
import { generateId } from '../../store/ids';
import { waitFor } from '../support/http';
import { useTestStore } from '../support/store';
import { activityEnv, drain, llmBlock } from '../support/activity-env';

const ROWS = 6;

// The policy runWorkflow gives node activities, with a short backoff: the provider's wait rules.
const RETRY_POLICY = {
  initialInterval: 50,
  backoffCoefficient: 2,
  maximumInterval: 1_000,
  maximumAttempts: 5,
  nonRetryableErrorTypes: ['ProviderRejected', 'InvalidNodeConfig'],
};

describe("a row's wait for its next call outlasts its block's attempt", function () {
  this.timeout(60_000);
  const db = useTestStore();

  /** An attempt's llm executor: a row in `throttled` is answered 429 asking `retryAfter` s, once. */
  function attempt(throttled: number[] = [], retryAfter = '') {
    const calls: Array<{ row: number; at: number; status: number }> = [];
    const llm = async (req: { iteration: number }) => {
      const throttle = throttled.includes(req.iteration);
      calls.push({ row: req.iteration, at: Date.now(), status: throttle ? 429 : 200 });
      if (throttle) {
        throttled.splice(throttled.indexOf(req.iteration), 1);
        throw providerFailure('openai', 429, 'Rate limit reached', retryAfter);
      }
      return {
        items: [completed({ type: 'text', text: `row ${req.iteration}` })],
        costUsd: 0.001,
        tokens: { input: 100, output: 10 },
      };
    };
    const run = createNodeBlockActivity({ llm } as unknown as RowExecutors, db.store.collections);
    return { run, calls };
  }

  const block = (runId: string): NodeBlockRequest =>
    llmBlock(runId, { accountId: 'acct_waits', rows: ROWS, concurrency: 2 });

  const env = (info: Partial<Info> = {}) => activityEnv({ retryPolicy: RETRY_POLICY, ...info });

  it("the attempt after a drain waits what is left of a provider's Retry-After", async () => {
    const runId = generateId('run');
    // Attempt 1: row 0 is asked to wait 3 s; the worker drains while it waits.
    const first = attempt([0], '3');
    const firstEnv = env();
    let last: unknown;
    const beats: number[] = [];
    firstEnv.on('heartbeat', (details: unknown) => {
      last = details;
      beats.push(Date.now());
    });
    const handedBack = firstEnv.run(first.run, block(runId)) as Promise<NodeBlockResult>;
    // Two heartbeats (a second apart) after the 429: the later one is the checkpoint of a row waiting.
    const throttled = () => first.calls.find((c) => c.status === 429);
    await waitFor(
      async () =>
        beats.filter((at) => at >= (throttled()?.at ?? Infinity)).length >= 2 || undefined,
      { what: 'row 0 waits, the other rows answered' },
    );
    drain(firstEnv);
    await assert.rejects(handedBack, (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.type, 'WorkerShutdown');
      return true;
    });
    const throttledAt = throttled()!.at;

    // Attempt 2 starts at once: the row it has left is called 3 s after its 429, not before.
    const second = attempt();
    const answer = (await env({ attempt: 2, heartbeatDetails: last }).run(
      second.run,
      block(runId),
    )) as NodeBlockResult;
    assert.equal(answer.done, ROWS);
    assert.deepEqual(
      second.calls.map((c) => c.row),
      [0],
    );
    const waited = second.calls[0].at - throttledAt;
    assert.ok(waited >= 2_900 && waited < 10_000, `called again ${waited} ms after its 429`);
  });

  it('a cancel ends at once the wait an earlier attempt left, the row not called', async () => {
    const runId = generateId('run');
    const next = attempt();
    const cancelEnv = env({ attempt: 2, heartbeatDetails: { waits: { 0: Date.now() + 60_000 } } });
    let beats = 0;
    cancelEnv.on('heartbeat', () => beats++);
    const answer = cancelEnv.run(next.run, block(runId)) as Promise<NodeBlockResult>;
    // Rows 1–5 run in the other lane while row 0 waits.
    const others = () => next.calls.filter((c) => c.row !== 0).length;
    await waitFor(async () => (others() === ROWS - 1 && beats > 0) || undefined, {
      what: 'the other rows answered',
    });
    const asked = Date.now();
    cancelEnv.cancel();
    const cancelled = await answer;
    assert.ok(Date.now() - asked < 2_000, `the cancel took ${Date.now() - asked} ms`);
    assert.equal(cancelled.cancelled, true);
    assert.equal(cancelled.done, ROWS - 1);
    assert.ok(!next.calls.some((c) => c.row === 0), 'row 0 is not called');
  });
});
