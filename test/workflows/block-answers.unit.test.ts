/**
 * workflows/block-answers.ts: a block shrunk by max_cost answers again for all its stored rows;
 * the run counts only what the later answer has more (rows, cost, usage, failed rows).
 */
import assert from 'node:assert/strict';
import type { NodeBlockResult } from '../../activities/types';
import { answerSince, finishedRows } from '../../workflows/block-answers';

const usage = (calls: number, completed: number, failed = 0, failedCalls = 0) => ({
  calls,
  input_tokens: 10 * calls,
  output_tokens: 20 * calls,
  completed,
  failed,
  ...(failedCalls > 0 && { failed_calls: failedCalls }),
});

describe('a shrunk block’s later answers count only what is new (block-answers)', () => {
  // Block [100, 200): the first answer ran rows 100–148 (row 120 failed), with one failed call.
  const first: NodeBlockResult = {
    done: 49,
    ranges: [[100, 149]],
    costUsd: 0.0049,
    usage: usage(49, 48, 1, 1),
    failed: [120],
  };

  it('an answer with nothing before it is counted whole', () => {
    assert.deepEqual(answerSince(undefined, first, 100, 100), first);
  });

  it('the next answer adds its new rows, their cost and usage, and its own uncounted calls', () => {
    const second: NodeBlockResult = {
      done: 80,
      ranges: [[100, 180]],
      costUsd: 0.008,
      usage: usage(80, 78, 2, 3),
      failed: [120, 170],
      uncounted: { calls: 0, input_tokens: 0, output_tokens: 0, failed_calls: 1 },
    };
    const added = answerSince(first, second, 100, 100);
    assert.equal(added.done, 31);
    assert.deepEqual(added.ranges, [[149, 180]]);
    assert.ok(Math.abs(added.costUsd - 0.0031) < 1e-12);
    assert.deepEqual(added.usage, {
      calls: 31,
      input_tokens: 310,
      output_tokens: 620,
      completed: 30,
      failed: 1,
      failed_calls: 2,
    });
    assert.deepEqual(added.failed, [170]);
    assert.deepEqual(added.uncounted, second.uncounted);
  });

  it('an answer for the whole block (no ranges) adds the rows the earlier one lacked', () => {
    const all: NodeBlockResult = { done: 100, ranges: [], costUsd: 0.01, usage: usage(100, 99, 1) };
    const added = answerSince(first, all, 100, 100);
    assert.equal(added.done, 51);
    assert.deepEqual(added.ranges, [[149, 200]]);
    assert.equal(added.failed, undefined, 'a list too long to send stays unknown');
    assert.equal(added.usage?.failed_calls, undefined);
  });

  it('reads the rows an answer finished', () => {
    assert.deepEqual(finishedRows({ done: 0, ranges: [], costUsd: 0 }, 0, 3), []);
    assert.deepEqual(finishedRows({ done: 3, ranges: [], costUsd: 0 }, 5, 3), [5, 6, 7]);
    assert.deepEqual(
      finishedRows(
        {
          done: 3,
          ranges: [
            [5, 6],
            [8, 10],
          ],
          costUsd: 0,
        },
        5,
        10,
      ),
      [5, 8, 9],
    );
  });
});
