/**
 * The worker's log lines say why an activity failed (worker/runtime.ts loggedError): the SDK hands
 * the failure as `error`, which pino wrote as an ApplicationFailure's own fields without its
 * message, and a plain Error as `{}`; and the line as written keeps its type (pino's default `err`
 * serializer wrote `"type":"Object"` on every one).
 */
import assert from 'node:assert/strict';
import vm from 'node:vm';
import { ApplicationFailure } from '@temporalio/common';
import type { DestinationStream } from 'pino';
import { loggedError, sdkLogWriter, workerLog } from '../../worker/runtime';

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

describe('worker log lines: as written', () => {
  it("an activity's failure keeps its type, message and stack on the line, under `err`", () => {
    const lines: string[] = [];
    const dest: DestinationStream = { write: (line: string) => void lines.push(line) };
    const write = sdkLogWriter(workerLog('info', dest));
    // As the SDK's activity interceptor logs a failed attempt (a tenant's receiver answering 503).
    write({
      level: 'WARN',
      message: 'Activity failed',
      timestampNanos: 0n,
      meta: {
        workflowId: 'run_1-webhook',
        activityType: 'deliverWebhook',
        error: ApplicationFailure.retryable('the receiver answered 503', 'WebhookFailed'),
      },
    });
    write({ level: 'DEBUG', message: 'below the level', timestampNanos: 0n });
    assert.equal(lines.length, 1);
    const line = JSON.parse(lines[0]) as Record<string, unknown>;
    assert.equal(line.msg, 'Activity failed');
    assert.equal(line.level, 40);
    assert.equal(line.run_id, 'run_1-webhook');
    assert.equal(line.activityType, 'deliverWebhook');
    const err = line.err as { type: string; message: string; stack?: string };
    assert.equal(err.type, 'WebhookFailed');
    assert.equal(err.message, 'the receiver answered 503');
    assert.match(err.stack ?? '', /the receiver answered 503/);
  });
});
