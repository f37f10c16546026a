// api/temporal/grpc-errors.ts on the errors the Temporal client really throws: a call on a closed
// connection has no gRPC status, only grpc-js's message, and must still read as "unreachable"
// (503 with Retry-After), bare or wrapped in the client's ServiceError. Nothing listens on the
// address: the calls never leave the closed channel.
import assert from 'node:assert/strict';
import { Client, Connection, NamespaceNotFoundError } from '@temporalio/client';
import {
  isTemporalUnavailable,
  isTemporalUnreachable,
  retryNamespaceMisses,
} from '../../../api/temporal/grpc-errors';
import { errorAnswer } from '../../../api/errors/error-answer';

describe('Temporal errors: a closed connection is unreachable', () => {
  it('maps the closed channel of a start, a describe and a raw call to 503 service_unavailable', async () => {
    const connection = Connection.lazy({ address: '127.0.0.1:1' });
    const client = new Client({ connection });
    await connection.close();
    const calls = [
      () => client.workflow.start('w', { workflowId: 'run_x', taskQueue: 'q', args: [] }),
      () => client.workflow.getHandle('run_x').describe(),
      () => connection.workflowService.getSystemInfo({}),
    ];
    for (const calling of calls) {
      const err = await calling().then(
        () => assert.fail('a closed connection answered'),
        (e: unknown) => e,
      );
      assert.ok(isTemporalUnreachable(err), String(err));
      assert.ok(isTemporalUnavailable(err), String(err));
      const api = errorAnswer(err);
      assert.equal(api.status, 503);
      assert.equal(api.error.code, 'service_unavailable');
    }
  });

  it('leaves other errors alone', () => {
    assert.equal(isTemporalUnavailable(new Error('something else')), false);
    assert.equal(errorAnswer(new Error('Channel has been shut down!')).status, 500);
  });
});

describe('Temporal errors: a namespace Temporal did not find', () => {
  it('is tried again, and answered 503 service_unavailable when it stays missing', async () => {
    let calls = 0;
    const flaky = () =>
      ++calls < 3 ? Promise.reject(new NamespaceNotFoundError('default')) : Promise.resolve('ok');
    assert.equal(await retryNamespaceMisses(flaky, [1, 1, 1]), 'ok');
    assert.equal(calls, 3);

    calls = 0;
    const missing = () => {
      calls++;
      return Promise.reject(new NamespaceNotFoundError('default'));
    };
    const err = await retryNamespaceMisses(missing, [1, 1]).catch((e: unknown) => e);
    assert.ok(err instanceof NamespaceNotFoundError);
    assert.equal(calls, 3, 'the call and one try after each delay');
    const api = errorAnswer(err);
    assert.equal(api.status, 503);
    assert.equal(api.error.code, 'service_unavailable');
  });

  it('never tries another error again', async () => {
    let calls = 0;
    const refused = () => {
      calls++;
      return Promise.reject(new Error('a bad request'));
    };
    await assert.rejects(retryNamespaceMisses(refused, [1, 1]), /a bad request/);
    assert.equal(calls, 1);
  });
});
