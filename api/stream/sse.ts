/**
 * Server-Sent Events framing (spec "Events", D11): `id: <sequence_number>` then `data: <JSON>`
 * then a blank line; `retry:` once, in the first event; comments for keepalives; `data: [DONE]` before the close.
 */
import type { ServerResponse } from 'node:http';
import type { StreamEvent } from '../../domain/run';
import type { StreamErrorEvent } from './stream-events';

/** The bytes of one event. */
export function formatEvent(event: StreamEvent): string {
  return formatEventText(event.sequence_number, JSON.stringify(event));
}

/** The bytes of one event given as its JSON text (a run's log writes its item events straight, domain/run-log.ts `jsonAt`). */
export function formatEventText(sequence: number, json: string): string {
  return `id: ${sequence}\ndata: ${json}\n\n`;
}

/**
 * D11: how long a disconnected EventSource waits before it reconnects (ms). Sent once, in the
 * first event's block rather than a block of its own: SSE parsers that report a dataless block as
 * an event (httpx-sse, the OpenAI Python SDK) would hand their callers an empty `data`.
 */
export const RETRY_MS = 2_000;

/** The bytes of a stream's first event: the `retry:` field, then the event. */
export function formatFirstEvent(event: StreamEvent): string {
  return `retry: ${RETRY_MS}\n${formatEvent(event)}`;
}

export const KEEPALIVE = ': keepalive\n\n';

/**
 * A stream's last bytes when its API process shuts down (docs/api.md "Streams"): a comment (every
 * SSE parser skips it, and a block of comments only is no event), then a clean end of the answer
 * without `[DONE]`. The client reconnects with `Last-Event-ID` (an `EventSource` by itself, after
 * `retry`), reaching another API process through the load balancer, and loses nothing.
 */
export const RECONNECT = ': server shutting down; reconnect with Last-Event-ID\n\n';

/**
 * A stream's last words when it may not go on (D6: its key was revoked): an `error` event
 * (stream-events.ts), with no `id:` (it is not part of the run's log) and no `[DONE]`.
 */
export function formatErrorEvent(event: StreamErrorEvent): string {
  return `data: ${JSON.stringify(event)}\n\n`;
}
export const DONE = 'data: [DONE]\n\n';

/** Writes the SSE status line and headers; nothing may compress or buffer the stream on its way. */
export function writeSseHead(res: ServerResponse): void {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-store, no-transform', // an account's outputs: kept by nobody on the way
    // No `Connection` header: Node keeps the connection alive when the client allows it, and one
    // set here would keep it open after [DONE] for a client that sent `Connection: close`.
    'X-Accel-Buffering': 'no', // nginx and friends: do not buffer
  });
  res.flushHeaders();
}
