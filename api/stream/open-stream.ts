/** Binds one HTTP response to a run's poller: SSE head, first event, keepalives, events, `[DONE]`, cleanup. */
import type { Context } from 'koa';
import type { RunEvent, StreamEvent } from '../../domain/run';
import type { PollerRegistry, RunKnowledge } from './run-poller';
import {
  DONE,
  KEEPALIVE,
  RECONNECT,
  formatErrorEvent,
  formatEvent,
  formatFirstEvent,
  writeSseHead,
} from './sse';
import { activeStreams } from '../../lib/metrics';
import { keyRevokedEvent } from './stream-events';

/** Bytes queued on the socket at most while a backlog is written (more waits for 'drain'). */
const PUMP_HIGH_WATER = 256 * 1024;

export interface StreamOptions {
  pollers: PollerRegistry;
  keepaliveMs: number;
  /** A client that stops reading is cut off once this much is queued for it: the API's memory stays bounded. */
  maxBufferedBytes: number;
  /** D6: asked every KEY_CHECK_MS; false (the stream's key was revoked) ends the stream with an `error` event. */
  keyIsLive?: () => Promise<boolean>;
  /** Gives back the stream's slot of its key's cap (stream-cap.ts) when the stream ends. */
  release?: () => void;
}

/** How often an open stream asks whether its key is still live (answers are cached up to KEY_CACHE_MS). */
const KEY_CHECK_MS = 1_000;

/**
 * Takes over the response for the run's stream. `opening` makes the first event once the run's
 * state is known and returns it with the client's cursor (the last sequence number it has).
 */
export function openStream(
  ctx: Context,
  opts: StreamOptions,
  runId: string,
  seed: RunKnowledge,
  opening: (state: RunKnowledge) => { event: StreamEvent; cursor: number },
): void {
  ctx.respond = false; // from here on this function owns the socket
  const res = ctx.res;
  if (ctx.req.socket.destroyed) return void opts.release?.(); // the client left while the route was deciding (a resume's look)
  // A stream is a long answer with keepalives and a buffer limit of its own: the socket's idle
  // timeout (api/server.ts) is for requests and plain answers, not for it.
  ctx.req.socket.setTimeout(0);
  let keepalive: NodeJS.Timeout | undefined;
  let keyCheck: NodeJS.Timeout | undefined;
  let closed = false;
  let opened = false;
  let unsubscribe: (() => void) | undefined;

  const close = () => {
    if (closed) return;
    closed = true;
    if (opened) activeStreams.dec();
    clearInterval(keepalive);
    clearInterval(keyCheck);
    unsubscribe?.();
    opts.release?.();
    if (!res.writableEnded) res.end();
  };
  // A client catching up (a reattach deep into a 100,000-row run) is handed tens of thousands of
  // events at once: they wait here, as references, and go out as fast as the socket drains, so
  // neither the client nor the limit below mistakes a catch-up for a client that stopped reading.
  // Events that arrive while the backlog drains join it and count as unread: a client that never
  // catches up is still cut off.
  const backlog: RunEvent[] = [];
  let next = 0; // index of the first backlog event not yet written
  let unreadNewBytes = 0;
  let catchingUp = true; // until the synchronous hand-over in `start` is over
  let ending = false;
  const highWater = Math.min(PUMP_HIGH_WATER, opts.maxBufferedBytes / 2);
  const pump = () => {
    while (!closed && next < backlog.length && res.writableLength < highWater)
      res.write(formatEvent(backlog[next++]));
    if (closed) return;
    if (next < backlog.length) return void res.once('drain', pump);
    backlog.length = next = unreadNewBytes = 0;
    if (ending) finish();
  };
  const finish = () => {
    write(DONE);
    close();
  };

  const write = (chunk: string) => {
    if (closed) return;
    // Measured before writing: what is still queued is what the client left unread. Checked after,
    // one event larger than the limit (a big output) would cut off a client that reads fine.
    // Memory per client stays under the limit plus one event.
    if (res.writableLength > opts.maxBufferedBytes) {
      res.destroy();
      close();
      return;
    }
    res.write(chunk);
  };
  res.on('close', close);

  // The head and the keepalives go out at once, before the run's state is known: while Temporal is
  // down the first event waits for the poller's first successful look, and the client
  // (an EventSource gives up for good on a non-200 answer) stays attached meanwhile.
  writeSseHead(res);
  opened = true;
  activeStreams.inc();
  keepalive = setInterval(() => write(KEEPALIVE), opts.keepaliveMs);
  const { keyIsLive } = opts;
  if (keyIsLive) {
    keyCheck = setInterval(() => {
      keyIsLive().then(
        (live) => {
          if (live || closed) return;
          // Not `[DONE]`: a client must not take it for the run's end. A reconnect is refused (401/403).
          write(formatErrorEvent(keyRevokedEvent()));
          close();
        },
        () => {}, // the store did not answer: ask again next time
      );
    }, KEY_CHECK_MS);
  }

  unsubscribe = opts.pollers.subscribe(runId, seed, {
    start: (state) => {
      const { event, cursor } = opening(state);
      write(formatFirstEvent(event));
      queueMicrotask(() => {
        catchingUp = false;
        pump();
      });
      return cursor;
    },
    deliver: (event: RunEvent) => {
      if (catchingUp) return void backlog.push(event);
      if (next >= backlog.length) return write(formatEvent(event));
      backlog.push(event);
      unreadNewBytes += JSON.stringify(event).length;
      if (unreadNewBytes > opts.maxBufferedBytes) {
        res.destroy();
        close();
      }
    },
    end: () => {
      if (catchingUp || next < backlog.length) ending = true;
      else finish();
    },
    drop: () => {
      // The process shuts down: a clean end (not a reset) after the reconnect comment, so proxies
      // pass the end on as one and the client resumes. Events still in the backlog are not sent:
      // the client's Last-Event-ID is the last one it got, and the next process sends the rest.
      // The closing server (api/server.ts) closes the connection once this answer is over.
      if (!closed && !res.writableEnded) res.write(RECONNECT);
      close();
    },
  });
  if (closed) unsubscribe(); // the client left before we subscribed
}
