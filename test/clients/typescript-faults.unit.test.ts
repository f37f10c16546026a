// The typed client (clients/typescript) against scripted servers (test/fakes/scripted-server.ts):
// what a proxy, a load balancer, an API restart or an unusual body does to it, and cancellation.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { WrsApiError, WrsClient, WrsConnectionError } from '../../clients/typescript';
import {
  errorAnswer,
  jsonAnswer,
  scriptedServer,
  sseFrame,
  sseHead,
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
        jsonAnswer(res, { id: 'run_1', status: n >= 1 ? 'completed' : 'running' }),
      );
      const controller = new AbortController();
      await client.wait('run_1', { signal: controller.signal });
      assert.equal(server!.log.length, 2);
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

  describe('idempotency keys', () => {
    const accepted = {
      run_id: 'run_1',
      status: 'pending',
      published_workflow_id: 'wf_1',
      published_workflow_version_id: 'wfv_1',
      created_at: '2026-01-01T00:00:00.000Z',
    };
    const sentKey = (n: number) => server!.log[n].headers['idempotency-key'];

    it('start() and rerun() send a key of their own when given none, and return it', async () => {
      const client = await serve((req, res) => {
        res.writeHead(202, { 'content-type': 'application/json' });
        res.end(JSON.stringify(accepted));
      });
      const first = await client.start({ workflowId: 'w' });
      const second = await client.start({ workflowId: 'w' });
      const rerun = await client.rerun('run_0');
      const given = await client.start({ workflowId: 'w', idempotencyKey: 'mine-1' });
      assert.match(String(sentKey(0)), /^wrs-client-[0-9a-f-]{36}$/);
      assert.deepEqual(
        [first.idempotencyKey, second.idempotencyKey, rerun.idempotencyKey, given.idempotencyKey],
        [sentKey(0), sentKey(1), sentKey(2), 'mine-1'],
      );
      assert.equal(new Set([sentKey(0), sentKey(1), sentKey(2)]).size, 3);
      assert.equal(sentKey(3), 'mine-1');
      assert.equal(first.run_id, 'run_1');
    });

    it('a start whose answer is lost rejects with the key it sent, and a retry with it sends the same key', async () => {
      const client = await serve((req, res, n) => {
        if (n === 0) return req.socket.destroy(); // the request arrived; its answer never does
        res.writeHead(202, { 'content-type': 'application/json' });
        res.end(JSON.stringify(accepted));
      });
      const lost = (await client
        .start({ workflowId: 'w' })
        .catch((e: unknown) => e)) as WrsConnectionError;
      assert.ok(lost instanceof WrsConnectionError, String(lost));
      assert.equal(lost.idempotencyKey, sentKey(0));
      assert.ok(lost.cause instanceof Error);
      const retried = await client.start({ workflowId: 'w', idempotencyKey: lost.idempotencyKey });
      assert.equal(sentKey(1), sentKey(0));
      assert.equal(retried.idempotencyKey, sentKey(0));
    });

    it('a start refused with 503 carries the key it sent', async () => {
      const client = await serve((req, res) =>
        errorAnswer(
          res,
          503,
          {
            type: 'server_error',
            code: 'service_unavailable',
            message: 'Run run_1 may have started.',
          },
          { 'retry-after': '2' },
        ),
      );
      const err = (await client.start({ workflowId: 'w' }).catch((e: unknown) => e)) as WrsApiError;
      assert.ok(err instanceof WrsApiError);
      assert.equal(err.code, 'service_unavailable');
      assert.equal(err.idempotencyKey, sentKey(0));
      assert.match(String(err.idempotencyKey), /^wrs-client-/);
    });

    it('stream(): the start carries a key, and a stream that ends before the run was created rejects with it', async () => {
      const client = await serve((req, res) => {
        sseHead(res);
        res.end(': keepalive\n\n');
      });
      const events: unknown[] = [];
      const err = await (async () => {
        for await (const event of client.stream({ workflowId: 'w' })) events.push(event);
      })().catch((e: unknown) => e);
      assert.ok(err instanceof WrsConnectionError, String(err));
      assert.match(String(sentKey(0)), /^wrs-client-/);
      assert.equal(err.idempotencyKey, sentKey(0));
      assert.deepEqual(events, []);
      assert.equal(server!.log.length, 1); // the start is never repeated by the client
    });
  });

  describe('Retry-After', () => {
    const down = { type: 'server_error', code: 'service_unavailable', message: 'down' };
    const created = {
      type: 'response.created',
      sequence_number: 0,
      response: { id: 'run_1', run_id: 'run_1', status: 'pending' },
    };

    it('is read as a non-negative integer or an HTTP-date; anything else is no Retry-After', async () => {
      const values = ['7', '0', '-5', '', 'garbage', '1.5', 'in a bit GMT'];
      const inAMinute = new Date(Date.now() + 60_000).toUTCString();
      const past = new Date(Date.now() - 60_000).toUTCString();
      const all = [...values, inAMinute, past];
      const client = await serve((req, res, n) =>
        errorAnswer(res, 429, { ...down, type: 'rate_limit_error' }, { 'retry-after': all[n] }),
      );
      const read = [];
      for (const _ of all)
        read.push(
          ((await client.get('run_1').catch((e: unknown) => e)) as WrsApiError).retryAfterSeconds,
        );
      const [date, gone] = read.splice(values.length);
      assert.deepEqual(read, [7, 0, undefined, undefined, undefined, undefined, undefined]);
      assert.ok(date! >= 58 && date! <= 60, String(date));
      assert.equal(gone, 0);
    });

    for (const value of ['0', '-5']) {
      it(`wait(): a 503 with Retry-After: ${value} waits at least a second, not a hot loop`, async () => {
        const client = await serve((req, res, n) =>
          n === 0
            ? errorAnswer(res, 503, down, { 'retry-after': value })
            : jsonAnswer(res, { id: 'run_1', status: 'completed' }),
        );
        const t = Date.now();
        assert.equal((await client.wait('run_1')).status, 'completed');
        assert.ok(Date.now() - t >= 950, `2 polls in ${Date.now() - t} ms`);
      });
    }

    it('stream(): a reconnect refused with 503 Retry-After: 0 waits at least a second', async () => {
      const at: number[] = [];
      const client = await serve((req, res, n) => {
        at.push(Date.now());
        if (n === 0) {
          sseHead(res);
          return res.end(sseFrame(created));
        }
        if (n === 1) return errorAnswer(res, 503, down, { 'retry-after': '0' });
        errorAnswer(res, 404, { type: 'not_found_error', code: 'not_found', message: 'gone' });
      });
      const err = await (async () => {
        for await (const _ of client.stream({ workflowId: 'w' }, { reconnectDelayMs: 10 })) void _;
      })().catch((e: unknown) => e);
      assert.ok(err instanceof WrsApiError && err.code === 'not_found', String(err));
      const gaps = at.slice(2).map((t, i) => t - at[i + 1]);
      assert.ok(gaps.length === 1 && gaps[0] >= 950, `gaps ${gaps.join(', ')} ms`);
    });
  });

  describe('wait() across an API restart', () => {
    const completed = { id: 'run_1', status: 'completed' };

    it('a dropped connection is retried: wait() returns the ended run', async () => {
      const client = await serve((req, res, n) => {
        if (n === 0) return req.socket.destroy(); // an API process restarting
        jsonAnswer(res, completed);
      });
      assert.equal((await client.wait('run_1')).status, 'completed');
      assert.equal(server!.log.length, 2);
    });

    it('a 504 is retried, and after maxRetries failures in a row the last error is thrown', async () => {
      const client = await serve((req, res, n) =>
        n === 0
          ? errorAnswer(res, 504, { type: 'server_error', message: 'gateway timeout' })
          : errorAnswer(res, 502, { type: 'server_error', message: 'bad gateway' }),
      );
      const err = await client.wait('run_1', { maxRetries: 1 }).catch((e: unknown) => e);
      assert.ok(err instanceof WrsApiError && err.status === 502, String(err));
      assert.equal(server!.log.length, 2);
    });

    it('includeOutput: false polls without the output (a big run’s items are not downloaded)', async () => {
      const client = await serve((req, res) =>
        jsonAnswer(res, { id: 'run_1', status: 'completed', output: null }),
      );
      assert.equal((await client.wait('run_1', { includeOutput: false })).status, 'completed');
      assert.equal((await client.wait('run_1')).status, 'completed');
      assert.deepEqual(
        server!.log.map((r) => r.url),
        [
          '/api/v1/runs/run_1?include_output=false',
          '/api/v1/runs/run_1', // by default the run comes with its output, as before
        ],
      );
    });

    it('a 500 is not retried', async () => {
      const client = await serve((req, res) =>
        errorAnswer(res, 500, { type: 'server_error', code: 'internal', message: 'bug' }),
      );
      await assert.rejects(
        client.wait('run_1'),
        (err: WrsApiError) => err.status === 500 && err.code === 'internal',
      );
      assert.equal(server!.log.length, 1);
    });
  });

  describe('stream() cursor and reconnect bound', () => {
    const created = {
      type: 'response.created',
      sequence_number: 0,
      response: { id: 'run_1', run_id: 'run_1', status: 'pending' },
    };
    const delta = (n: number) => ({ type: 'response.output_text.delta', sequence_number: n });
    const completed = {
      type: 'response.completed',
      sequence_number: 3,
      response: { run_id: 'run_1' },
    };
    const resumed = (n: number) => ({
      type: 'response.resumed',
      sequence_number: n,
      response: { id: 'run_1', run_id: 'run_1', status: 'running' },
    });

    async function collect(client: WrsClient, opts: Parameters<WrsClient['stream']>[1]) {
      const events: { sequence_number?: number }[] = [];
      const error = await (async () => {
        for await (const event of client.stream({ workflowId: 'w' }, opts)) events.push(event);
      })().catch((e: unknown) => e);
      return { events, error };
    }

    it('an event without a sequence number leaves the cursor where it was', async () => {
      const client = await serve((req, res, n) => {
        sseHead(res);
        if (n === 0)
          return res.end(
            [created, delta(1), delta(2), { type: 'response.notice' }]
              .map((e) => sseFrame(e))
              .join(''),
          );
        const after = Number(req.headers['last-event-id'] ?? 0);
        res.end(
          [delta(1), delta(2), completed]
            .filter((e) => e.sequence_number > after)
            .map((e) => sseFrame(e))
            .join('') + 'data: [DONE]\n\n',
        );
      });
      const { events, error } = await collect(client, { reconnectDelayMs: 10 });
      assert.equal(error, undefined);
      assert.deepEqual(
        events.map((e) => e.sequence_number),
        [0, 1, 2, undefined, 3],
      );
      assert.equal(server!.log[1].headers['last-event-id'], '2');
    });

    for (const [error, status] of [
      [{ type: 'not_found_error', code: 'not_found', message: 'Run `run_1` was deleted.' }, 404],
      [
        {
          type: 'authentication_error',
          code: 'key_revoked',
          message: 'The API key of this stream has been revoked.',
        },
        401,
      ],
    ] as const) {
      it(`the stream's \`error\` event (${error.code}) is raised as a WrsApiError, without a reconnect`, async () => {
        const client = await serve((req, res) => {
          sseHead(res);
          res.end(sseFrame(created) + sseFrame(delta(1)) + sseFrame({ type: 'error', error }));
        });
        const { events, error: raised } = await collect(client, { reconnectDelayMs: 10 });
        assert.ok(raised instanceof WrsApiError, String(raised));
        assert.deepEqual(
          [raised.status, raised.type, raised.code, raised.message],
          [status, error.type, error.code, error.message],
        );
        assert.deepEqual(
          events.map((e) => e.sequence_number),
          [0, 1],
        );
        assert.equal(server!.log.length, 1);
      });
    }

    it('reconnects answered with response.resumed and closed count against maxReconnects', async () => {
      const client = await serve((req, res, n) => {
        sseHead(res);
        res.end(sseFrame(n === 0 ? created : resumed(0)));
      });
      const { error } = await collect(client, { reconnectDelayMs: 10, maxReconnects: 3 });
      assert.match(String(error), /gave up reconnecting to run run_1/);
      assert.equal(server!.log.length, 1 + 4);
    });

    it('a reconnect that delivers a new event starts the count again', async () => {
      // Each connection brings one new event, then drops: never more than one failure in a row.
      const client = await serve((req, res, n) => {
        sseHead(res);
        if (n === 0) return res.end(sseFrame(created));
        const after = Number(req.headers['last-event-id']);
        res.end(
          sseFrame(resumed(after)) + sseFrame(after + 1 === 3 ? completed : delta(after + 1)),
        );
      });
      const { events, error } = await collect(client, { reconnectDelayMs: 10, maxReconnects: 1 });
      assert.equal(error, undefined);
      assert.deepEqual(
        events.map((e) => e.sequence_number),
        [0, 1, 2, 3],
      );
    });
  });

  describe('parsing streams and the results file', () => {
    const created = {
      type: 'response.created',
      sequence_number: 0,
      response: { id: 'run_1', run_id: 'run_1', status: 'pending' },
    };
    const completed = {
      type: 'response.completed',
      sequence_number: 3,
      response: { run_id: 'run_1' },
    };

    async function events(client: WrsClient): Promise<{ type: string; delta?: string }[]> {
      const seen = [];
      for await (const event of client.stream({ workflowId: 'w' }, { maxReconnects: 0 }))
        seen.push(event);
      return seen as { type: string; delta?: string }[];
    }

    /** Writes `bytes` in pieces of `size`, as the client reads them (backpressure). */
    async function writeIn(res: import('node:http').ServerResponse, bytes: Buffer, size: number) {
      for (let i = 0; i < bytes.length; i += size)
        if (!res.write(bytes.subarray(i, i + size))) await new Promise((r) => res.once('drain', r));
      res.end();
    }

    for (const [name, eol] of [
      ['\\r\\n', '\r\n'],
      ['\\r', '\r'],
    ] as const) {
      it(`reads a stream with ${name} line ends, split at every byte, with multi-line data and comments`, async () => {
        const text =
          `retry: 2000${eol}` +
          sseFrame(created, eol) +
          `: keepalive${eol}${eol}` +
          `id: 1${eol}data: {"type":"response.output_text.delta",${eol}data: "sequence_number":1,"delta":"é😀"}${eol}${eol}` +
          sseFrame(completed, eol) +
          `data: [DONE]${eol}${eol}`;
        const client = await serve(async (req, res) => {
          sseHead(res);
          await writeIn(res, Buffer.from(text), 1);
        });
        const seen = await events(client);
        assert.deepEqual(
          seen.map((e) => e.type),
          ['response.created', 'response.output_text.delta', 'response.completed'],
        );
        assert.equal(seen[1].delta, 'é😀');
        assert.equal(server!.log.length, 1);
      });
    }

    it('reads one 24 MiB event in 16 KiB pieces in linear time', async () => {
      const big = {
        type: 'response.output_item.done',
        sequence_number: 1,
        item: { text: 'x'.repeat(24 * 1024 * 1024) },
      };
      const body = Buffer.from(
        sseFrame(created) + sseFrame(big) + sseFrame(completed) + 'data: [DONE]\n\n',
      );
      const client = await serve(async (req, res) => {
        sseHead(res);
        await writeIn(res, body, 16 * 1024);
      });
      const t = Date.now();
      assert.equal((await events(client)).length, 3);
      // Measured: 9.6 s when each piece rescanned the whole event; 0.3 s scanning each piece once.
      assert.ok(Date.now() - t < 3_000, `${Date.now() - t} ms`);
    });

    it('exportItems() reads one 24 MiB line in 16 KiB pieces in linear time', async () => {
      const item = {
        id: 'a',
        item_index: 0,
        status: 'completed',
        parts: [{ type: 'text', text: 'y'.repeat(24 * 1024 * 1024) }],
      };
      const small = { id: 'b', item_index: 1, status: 'completed', parts: [] };
      const client = await serve(async (req, res) => {
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        await writeIn(
          res,
          Buffer.from(`${JSON.stringify(item)}\n${JSON.stringify(small)}`),
          16 * 1024,
        );
      });
      const t = Date.now();
      const ids = [];
      for await (const got of client.exportItems('run_1', 'k')) ids.push(got.id);
      assert.deepEqual(ids, ['a', 'b']);
      assert.ok(Date.now() - t < 3_000, `${Date.now() - t} ms`);
    });
  });
});
