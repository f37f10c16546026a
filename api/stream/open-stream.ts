/** Binds one HTTP response to a run's poller: SSE head, first event, keepalives, events, `[DONE]`, cleanup. */
import type { ServerResponse } from 'node:http';
import type { Context } from 'koa';
import type { StreamEvent } from '../../domain/run';
import type { EventsView } from '../../domain/run-log';
import type { PollerRegistry, RunKnowledge, RunSeed } from './run-poller';
import {
  DONE,
  KEEPALIVE,
  RECONNECT,
  formatErrorEvent,
  formatEventText,
  formatFirstEvent,
  writeSseHead,
} from './sse';
import { activeStreams } from '../../lib/metrics';
import { keyRevokedEvent, runDeletedEvent } from './stream-events';

/** Bytes queued on the socket at most while a backlog is written (more waits for 'drain'). */
const PUMP_HIGH_WATER = 256 * 1024;
/**
 * A backlog is written this many characters at a time, each event's text straight from the log
 * (`jsonAt`): 2,000,000 item events replayed over loopback took 1.2–1.4 s of the API's CPU, against
 * 8.3–9.8 s as a write per event made as an object and serialized.
 */
const WRITE_CHARS = 16 * 1024;

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
  seed: RunSeed,
  opening: (state: RunKnowledge) => { event: StreamEvent; cursor: number },
): void {
  ctx.respond = false; // from here on this function owns the socket
  if (ctx.req.socket.destroyed) return void opts.release?.(); // the client left while the route was deciding (a resume's look)
  // A stream is a long answer with keepalives and a buffer limit of its own: the socket's idle
  // timeout (api/server.ts) is for requests and plain answers, not for it.
  ctx.req.socket.setTimeout(0);
  const stream = new RunStream(ctx.res, opts);
  stream.open();
  stream.subscribe(runId, seed, opening);
}

/** One open stream: its socket, its timers, and how far it has read its run's log. */
class RunStream {
  private keepalive: NodeJS.Timeout | undefined;
  private keyCheck: NodeJS.Timeout | undefined;
  private closed = false;
  private opened = false;
  private unsubscribe: (() => void) | undefined;
  // A client catching up (a reattach deep into a million-row run) may read millions of events at
  // once: they stay in the poller's compact log (domain/run-log.ts) and are made into text one at a
  // time as the socket drains, so a catch-up costs no memory and neither the client nor the limit
  // below mistakes it for a client that stopped reading. Events that arrive while the client is
  // behind count as unread: a client that never catches up is still cut off.
  private log: EventsView | undefined;
  private sent = 0; // the last sequence number written
  private granted = 0; // the last one the poller lets this client have
  private unreadNewBytes = 0;
  private catchingUp = true; // until the synchronous hand-over in `start` is over
  private ending = false;
  private readonly highWater: number;

  constructor(
    private readonly res: ServerResponse,
    private readonly opts: StreamOptions,
  ) {
    this.highWater = Math.min(PUMP_HIGH_WATER, opts.maxBufferedBytes / 2);
  }

  private readonly close = (): void => {
    if (this.closed) return;
    this.closed = true;
    if (this.opened) activeStreams.dec();
    clearInterval(this.keepalive);
    clearInterval(this.keyCheck);
    this.unsubscribe?.();
    this.opts.release?.();
    if (!this.res.writableEnded) this.res.end();
  };

  private readonly pump = (): void => {
    const { res, log } = this;
    while (!this.closed && this.sent < this.granted && res.writableLength < this.highWater) {
      let text = '';
      while (this.sent < this.granted && text.length < WRITE_CHARS) {
        const sequence = ++this.sent;
        text += formatEventText(sequence, log!.jsonAt(sequence));
      }
      res.write(text);
    }
    if (this.closed) return;
    if (this.sent < this.granted) return void res.once('drain', this.pump);
    this.unreadNewBytes = 0;
    if (this.ending) this.finish();
  };

  private get behind(): boolean {
    return this.sent < this.granted;
  }

  private finish(): void {
    this.write(DONE);
    this.close();
  }

  private write(chunk: string): void {
    if (this.closed) return;
    // Measured before writing: what is still queued is what the client left unread. Checked after,
    // one event larger than the limit (a big output) would cut off a client that reads fine.
    // Memory per client stays under the limit plus one event.
    if (this.res.writableLength > this.opts.maxBufferedBytes) {
      this.res.destroy();
      this.close();
      return;
    }
    this.res.write(chunk);
  }

  /**
   * The head and the keepalives go out at once, before the run's state is known: while Temporal is
   * down the first event waits for the poller's first successful look, and the client
   * (an EventSource gives up for good on a non-200 answer) stays attached meanwhile.
   */
  open(): void {
    this.res.on('close', this.close);
    writeSseHead(this.res);
    this.opened = true;
    activeStreams.inc();
    this.keepalive = setInterval(() => this.write(KEEPALIVE), this.opts.keepaliveMs);
    const { keyIsLive } = this.opts;
    if (!keyIsLive) return;
    this.keyCheck = setInterval(() => {
      keyIsLive().then(
        (live) => {
          if (live || this.closed) return;
          // Not `[DONE]`: a client must not take it for the run's end. A reconnect is refused (401/403).
          this.write(formatErrorEvent(keyRevokedEvent()));
          this.close();
        },
        () => {}, // the store did not answer: ask again next time
      );
    }, KEY_CHECK_MS);
  }

  /** Hands the stream to the run's poller: the first event, what the client missed, then each event as it comes. */
  subscribe(
    runId: string,
    seed: RunSeed,
    opening: (state: RunKnowledge) => { event: StreamEvent; cursor: number },
  ): void {
    this.unsubscribe = this.opts.pollers.subscribe(runId, seed, {
      start: (state) => {
        const { event, cursor } = opening(state);
        this.log = state.events;
        this.sent = this.granted = cursor;
        this.write(formatFirstEvent(event));
        queueMicrotask(() => {
          this.catchingUp = false;
          this.pump();
        });
        return cursor;
      },
      advance: (upTo) => this.advance(upTo),
      end: () => {
        if (this.catchingUp || this.behind) this.ending = true;
        else this.finish();
      },
      drop: () => {
        // The process shuts down: a clean end (not a reset) after the reconnect comment, so proxies
        // pass the end on as one and the client resumes. Events still in the backlog are not sent:
        // the client's Last-Event-ID is the last one it got, and the next process sends the rest.
        // The closing server (api/server.ts) closes the connection once this answer is over.
        if (!this.closed && !this.res.writableEnded) this.res.write(RECONNECT);
        this.close();
      },
      gone: () => {
        // Not `[DONE]`, and after what the client has been sent: a reconnect is a 404, the run's answer now.
        this.write(formatErrorEvent(runDeletedEvent(runId)));
        this.close();
      },
    });
    if (this.closed) this.unsubscribe(); // the client left before we subscribed
  }

  /** The poller has events up to `upTo` for this client: written as the socket takes them (`pump`). */
  private advance(upTo: number): void {
    if (this.catchingUp || !this.behind) {
      this.granted = upTo;
      if (!this.catchingUp) this.pump();
      return;
    }
    // Behind already (a drain is awaited): these are unread.
    for (let seq = this.granted + 1; seq <= upTo; seq++)
      this.unreadNewBytes += formatEventText(seq, this.log!.jsonAt(seq)).length;
    this.granted = upTo;
    if (this.unreadNewBytes > this.opts.maxBufferedBytes) {
      this.res.destroy();
      this.close();
    }
  }
}
