/** Binds one HTTP response to a run's poller: SSE head, first event, keepalives, events, `[DONE]`, cleanup. */
import type { Context } from 'koa';
import type { RunEvent, StreamEvent } from '../../workflows/definitions';
import type { PollerRegistry, RunKnowledge } from './run-poller';
import { DONE, KEEPALIVE, formatEvent, formatFirstEvent, writeSseHead } from './sse';
import { activeStreams } from '../../metrics';

export interface StreamOptions {
  pollers: PollerRegistry;
  keepaliveMs: number;
  /** A client that stops reading is cut off once this much is queued for it (issue 8: bounded memory). */
  maxBufferedBytes: number;
}

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
  if (ctx.req.socket.destroyed) return; // the client left while the route was deciding (a resume's look)
  let keepalive: NodeJS.Timeout | undefined;
  let closed = false;
  let opened = false;
  let unsubscribe: (() => void) | undefined;

  const close = () => {
    if (closed) return;
    closed = true;
    if (opened) activeStreams.dec();
    clearInterval(keepalive);
    unsubscribe?.();
    if (!res.writableEnded) res.end();
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
  // down the first event waits for the poller's first successful look (issue 8), and the client
  // (an EventSource gives up for good on a non-200 answer) stays attached meanwhile.
  writeSseHead(res);
  opened = true;
  activeStreams.inc();
  keepalive = setInterval(() => write(KEEPALIVE), opts.keepaliveMs);

  unsubscribe = opts.pollers.subscribe(runId, seed, {
    start: (state) => {
      const { event, cursor } = opening(state);
      write(formatFirstEvent(event));
      return cursor;
    },
    deliver: (event: RunEvent) => write(formatEvent(event)),
    end: () => {
      write(DONE);
      close();
    },
    drop: () => {
      res.destroy(); // the socket too, so a closing server is not held open by a kept-alive connection
      close();
    },
  });
  if (closed) unsubscribe(); // the client left before we subscribed
}
