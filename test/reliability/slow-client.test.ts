/**
 * A stream client that stops reading does not grow the API's memory without
 * bound. The kernel's socket buffers take what they can; after that every write queues in the
 * API process, and once more than STREAM_MAX_BUFFERED_BYTES is queued the API cuts the client
 * off (api/stream/open-stream.ts) and the run's poller goes away.
 *
 * Measured here (loopback, Linux defaults): the kernel absorbs 0.25 to 4 MB per stalled socket
 * (the server's send buffer grows up to `tcp_wmem` max, even with a 1 KB client receive buffer), so
 * keepalives alone (14 bytes per interval) need minutes to get past it. The test therefore
 * feeds the run's real poller large events, as a run with big outputs would, at about 10 MB/s.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import type { RunEvent } from '../../domain/run';
import { greetingWorkflow, publish } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { openSse } from '../support/sse';
import { useService } from '../support/use-service';
import { startRun } from '../support/runs';

const MAX_BUFFERED = 64 * 1024;
const EVENT_BYTES = 256 * 1024;

describe('reliability: slow stream clients', function () {
  this.timeout(120_000);
  // No worker: runs stay pending, so their streams never end by themselves.
  const ctx = useService({
    worker: false,
    env: {
      STREAM_MAX_BUFFERED_BYTES: String(MAX_BUFFERED),
      STREAM_KEEPALIVE_MS: '5',
      STREAM_POLL_MS: '20',
    },
  });

  before(async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet'));
  });

  const pendingRun = () => startRun(ctx.svc.url, ctx.key, 'greet', { name: 'slow' });

  /** Appends a large non-terminal event to the run's live poller, which hands it to every client on its next tick. */
  function feed(runId: string): boolean {
    const poller = ctx.svc.api.pollers.get(runId);
    if (!poller) return false;
    const event = {
      type: 'response.in_progress',
      sequence_number: poller.log.length,
      padding: 'p'.repeat(EVENT_BYTES),
    } as unknown as RunEvent;
    poller.log.append(event);
    return true;
  }

  it('disconnects a client that stops reading once its queue passes the limit, and releases the poller', async () => {
    const runId = await pendingRun();
    const { hostname, port } = new URL(ctx.svc.url);
    // The server's side of the connection, to watch how much the API process queues for it.
    const serverSide = new Promise<net.Socket>((resolve) =>
      ctx.svc.api.server.once('connection', resolve),
    );
    const socket = net.connect(Number(port), hostname);
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => undefined); // a reset is a fine way to be cut off
    // Read only the head (proof that the stream opened), then stop reading for good.
    const head = await new Promise<string>((resolve, reject) => {
      let text = '';
      const onData = (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if (text.includes('\r\n\r\n')) {
          socket.pause();
          socket.off('data', onData);
          resolve(text);
        }
      };
      socket.on('data', onData);
      socket.once('error', reject);
      socket.write(
        `GET /api/v1/runs/${runId}/stream HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${ctx.key}\r\nAccept: text/event-stream\r\n\r\n`,
      );
    });
    assert.match(head, /^HTTP\/1\.1 200 /);
    const server = await serverSide;
    assert.equal(ctx.svc.api.pollers.size, 1, 'the stream has its poller');

    // Produce until the API hangs up (or 64 MB, far past any kernel buffer: then the bound is broken).
    let fed = 0;
    let maxQueued = 0;
    const started = Date.now();
    while (feed(runId)) {
      fed += EVENT_BYTES;
      assert.ok(
        fed < 64 * 1024 * 1024,
        `still connected after ${fed} bytes of events (queued ${server.writableLength})`,
      );
      await new Promise((r) => setTimeout(r, 25)); // about one poll tick per event
      maxQueued = Math.max(maxQueued, server.destroyed ? 0 : server.writableLength);
    }
    const cutAfterMs = Date.now() - started;
    assert.equal(ctx.svc.api.pollers.size, 0);
    // The API never held more than the limit plus the one event that crossed it.
    assert.ok(
      maxQueued <= MAX_BUFFERED + EVENT_BYTES + 4096,
      `the API queued ${maxQueued} bytes for a stalled client`,
    );
    assert.ok(server.destroyed, 'the server side of the connection is gone');

    // Reading again yields what the kernel held (bounded) and then the end, without [DONE].
    let received = 0;
    let tail = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length;
      tail = (tail + chunk.toString('latin1')).slice(-64);
    });
    socket.resume();
    await closed;
    assert.ok(
      !tail.includes('[DONE]'),
      'a cut-off client gets no [DONE]: it reconnects with Last-Event-ID',
    );
    assert.ok(
      received < fed,
      `the client received ${received} of ${fed} bytes: nothing was held back for it`,
    );

    console.log(
      `      cut off after ${cutAfterMs} ms, ${fed} bytes of events; kernel buffers had ${received} bytes; API queue peak ${maxQueued} bytes`,
    );
  });

  it('a client that keeps reading gets every event past the limit and is not cut off', async () => {
    const runId = await pendingRun();
    const stream = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream`, { key: ctx.key });
    assert.equal(stream.status, 200);
    await stream.until((f) => f.event?.type === 'response.resumed');
    // 4 MB of events, past the kernel buffers and many times the limit, read as they come.
    const count = 16;
    for (let i = 0; i < count; i++) {
      assert.ok(feed(runId), 'the poller is still there');
      const seq = ctx.svc.api.pollers.get(runId)!.log.length - 1;
      await stream.until(
        (f) => f.event?.sequence_number === seq && f.event?.type === 'response.in_progress',
      );
    }
    assert.equal(
      stream.frames.filter((f) => f.event?.type === 'response.in_progress').length,
      count,
    );
    assert.equal(ctx.svc.api.pollers.size, 1);
    stream.abort();
    await stream.closed;
    await waitFor(async () => (ctx.svc.api.pollers.size === 0 ? true : undefined), {
      what: 'the poller to go with its last client',
    });
    assert.equal((await call(ctx.svc.url, 'GET', '/healthz')).status, 200);
  });
});
