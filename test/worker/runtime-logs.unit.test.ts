/**
 * The worker's log lines say why an activity failed (worker/runtime.ts loggedError): the SDK hands
 * the failure as `error`, which pino wrote as an ApplicationFailure's own fields without its
 * message, and a plain Error as `{}`.
 */
import assert from 'node:assert/strict';
import vm from 'node:vm';
import { ApplicationFailure } from '@temporalio/common';
import { loggedError } from '../../worker/runtime';

describe('worker log lines: a failure as `err`', () => {
  it('keeps the type, the message and the stack, bounded', () => {
    const failure = loggedError(
      ApplicationFailure.nonRetryable(
        `the answer was refused: ${'x'.repeat(5_000)}`,
        'ProviderRejected',
      ),
    );
    assert.equal(failure.type, 'ProviderRejected');
    assert.match(failure.message, /^the answer was refused: x+$/);
    assert.equal(failure.message.length, 1_000);
    assert.ok(failure.stack && failure.stack.length <= 2_000);
    assert.deepEqual(
      { ...loggedError(new TypeError('no such thing')), stack: undefined },
      { type: 'TypeError', message: 'no such thing', stack: undefined },
    );
    assert.deepEqual(loggedError('a string'), { type: 'string', message: 'a string' });
    // An error of another realm (the workflow sandbox's) by its shape.
    const sandboxed = vm.runInNewContext('new RangeError("out of range")');
    assert.equal(sandboxed instanceof Error, false);
    assert.equal(loggedError(sandboxed).message, 'out of range');
    assert.equal(loggedError(sandboxed).type, 'RangeError');
  });
});
