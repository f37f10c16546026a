/**
 * A big node's row retried inside its block (activities/row-retries.ts): the wait after each
 * failed attempt (the block's retry policy, a provider's Retry-After within bounds), when a row
 * has used its attempts (its calls across the block's attempts, D36 RowCalls), which errors are
 * not retried, and a wait that ends at once when the block stops.
 */
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/activity';
import { MongoNetworkError } from 'mongodb';
import { providerFailure } from '../../activities/failures';
import { RowCalls } from '../../activities/node-chunk';
import { pause, ROW_RETRY_AFTER_MAX_MS, RowRetries, rowWaitMs } from '../../activities/row-retries';

// The policy runWorkflow gives node activities (RETRY_INITIAL_MS 1000, NODE_MAX_ATTEMPTS 5).
const POLICY = {
  initialInterval: 1_000,
  backoffCoefficient: 2,
  maximumInterval: 30_000,
  maximumAttempts: 5,
  nonRetryableErrorTypes: ['ProviderRejected', 'InvalidNodeConfig'],
};

const unavailable = (retryAfter?: string) =>
  providerFailure('openai', 503, 'The server is overloaded', retryAfter);

describe('row retries in a block (activities/row-retries.ts)', () => {
  it('waits as the policy backs off: doubling from the initial interval up to the maximum', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7].map((used) => rowWaitMs(POLICY, used)),
      [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000],
    );
    // Temporal's defaults where the policy sets none.
    assert.equal(rowWaitMs({ maximumAttempts: 5 }, 3), 4_000);
  });

  it("waits a provider's Retry-After when longer than the backoff, up to a minute", () => {
    assert.equal(rowWaitMs(POLICY, 1, 12_000), 12_000);
    assert.equal(rowWaitMs(POLICY, 4, 2_000), 8_000);
    assert.equal(rowWaitMs(POLICY, 1, 3_600_000), ROW_RETRY_AFTER_MAX_MS);
  });

  it('gives a row its own attempts: its calls, those of earlier block attempts included', () => {
    const calls = new RowCalls({ 7: 2 }); // row 7 made two calls in an attempt a worker lost
    const retries = new RowRetries(POLICY, calls);
    calls.add(3);
    assert.deepEqual(retries.after(3, unavailable(), true), { waitMs: 1_000 });
    calls.add(7);
    assert.deepEqual(retries.after(7, unavailable(), true), { waitMs: 4_000 });
    calls.add(7);
    calls.add(7);
    const next = retries.after(7, unavailable('2'), true);
    assert.ok('stop' in next);
    const failure = next.stop as ApplicationFailure;
    assert.ok(failure instanceof ApplicationFailure);
    assert.equal(failure.nonRetryable, true);
    assert.equal(failure.type, 'ProviderUnavailable');
    assert.equal(
      failure.message,
      'gave up after 5 attempt(s): openai answered 503: The server is overloaded',
    );
    assert.deepEqual(failure.details, [{ status: 503, retryAfterMs: 2_000 }]);
  });

  it('counts an attempt that failed before sending its call', () => {
    const retries = new RowRetries({ ...POLICY, maximumAttempts: 2 }, new RowCalls(undefined));
    const dropped = new Error('socket hang up');
    assert.deepEqual(retries.after(0, dropped, false), { waitMs: 1_000 });
    const next = retries.after(0, dropped, false);
    assert.ok('stop' in next);
    assert.equal((next.stop as Error).message, 'gave up after 2 attempt(s): socket hang up');
  });

  it('stops the block at once on what the policy does not retry, a store down, or without a policy', () => {
    const calls = new RowCalls(undefined);
    const retries = new RowRetries(POLICY, calls);
    const refused = providerFailure('openai', 400, 'bad prompt');
    const invalid = ApplicationFailure.retryable('no such provider', 'InvalidNodeConfig');
    const notRetryable = ApplicationFailure.nonRetryable('broken', 'Other');
    // A store that cannot be reached: the block's next attempt waits for it (activities/store-wait.ts).
    const storeDown = new MongoNetworkError('connection refused');
    for (const err of [refused, invalid, notRetryable, storeDown])
      assert.deepEqual(retries.after(0, err, true), { stop: err });
    const err = unavailable();
    assert.deepEqual(new RowRetries(undefined, calls).after(0, err, true), { stop: err });
  });

  it('ends a wait as soon as the block stops, and answers whether it passed', async () => {
    const halt = new AbortController();
    assert.equal(await pause(1, halt.signal), true);
    const started = performance.now();
    const waiting = pause(60_000, halt.signal);
    halt.abort();
    assert.equal(await waiting, false);
    assert.ok(performance.now() - started < 1_000);
  });
});
