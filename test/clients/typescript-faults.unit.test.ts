// The typed client (clients/typescript) against scripted servers (test/fakes/scripted-server.ts):
// what a proxy, a load balancer, an API restart or an unusual body does to it, and cancellation.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { WrsApiError, WrsClient } from '../../clients/typescript';
import {
  errorAnswer,
  jsonAnswer,
  scriptedServer,
  type ScriptedHandler,
  type ScriptedServer,
} from '../fakes/scripted-server';

describe('typed client against scripted servers', function () {
  this.timeout(20_000);
  let server: ScriptedServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  async function serve(handler: ScriptedHandler): Promise<WrsClient> {
    server = await scriptedServer(handler);
    return new WrsClient({ baseUrl: server.url, apiKey: 'wrs_sk_test' });
  }

  describe('cancellation and errors', () => {
    it('wait(): an abort while a poll is in flight rejects at once with the signal’s reason', async () => {
      let answered!: () => void;
      const polled = new Promise<void>((resolve) => (answered = resolve));
      const client = await serve((req, res) => {
        answered();
        setTimeout(() => jsonAnswer(res, { id: 'run_1', status: 'running' }), 2_000);
      });
      const controller = new AbortController();
      const waiting = client.wait('run_1', { signal: controller.signal });
      await polled;
      const reason = new Error('stopped by the caller');
      const t = Date.now();
      controller.abort(reason);
      await assert.rejects(waiting, (err) => err === reason);
      assert.ok(Date.now() - t < 1_000, `rejected after ${Date.now() - t} ms`);
      assert.equal(server!.log.length, 1);
    });

    it('wait(): an already aborted signal rejects before any poll', async () => {
      const client = await serve((req, res) => jsonAnswer(res, { id: 'run_1', status: 'running' }));
      const reason = new Error('already');
      await assert.rejects(
        client.wait('run_1', { signal: AbortSignal.abort(reason) }),
        (err) => err === reason,
      );
      assert.equal(server!.log.length, 0);
    });

    it('wait(): leaves no abort listener on the caller’s signal, one poll or many', async () => {
      const client = await serve((req, res, n) =>
        jsonAnswer(res, { id: 'run_1', status: n >= 3 ? 'completed' : 'running' }),
      );
      const controller = new AbortController();
      await client.wait('run_1', { signal: controller.signal });
      assert.equal(server!.log.length, 4);
      assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
    });

    it('every method takes a signal: get() on a server that never answers is aborted', async () => {
      const client = await serve(() => undefined);
      const reason = new Error('gave up');
      const controller = new AbortController();
      const reading = client.get('run_1', { signal: controller.signal });
      setTimeout(() => controller.abort(reason), 100);
      await assert.rejects(reading, (err) => err === reason);
      await assert.rejects(
        client.list({}, { signal: AbortSignal.abort(reason) }),
        (err) => err === reason,
      );
      await assert.rejects(
        client.start({ workflowId: 'w' }, { signal: AbortSignal.abort(reason) }),
        (err) => err === reason,
      );
      await assert.rejects(
        client.account({ signal: AbortSignal.abort(reason) }),
        (err) => err === reason,
      );
    });

    it('an error answer carries the request id (X-Request-Id) and the envelope', async () => {
      const client = await serve((req, res) =>
        errorAnswer(
          res,
          429,
          { type: 'rate_limit_error', code: 'rate_limited', message: 'slow down' },
          { 'retry-after': '7', 'x-request-id': 'req_123' },
        ),
      );
      const err = (await client.get('run_1').catch((e: unknown) => e)) as WrsApiError;
      assert.ok(err instanceof WrsApiError);
      assert.equal(err.code, 'rate_limited');
      assert.deepEqual([err.status, err.retryAfterSeconds, err.requestId], [429, 7, 'req_123']);
      assert.deepEqual(err.body, {
        error: { type: 'rate_limit_error', code: 'rate_limited', message: 'slow down' },
      });
    });
  });
});
