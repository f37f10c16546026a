/**
 * Server-Sent Events framing (spec "Events", D11): `id: <sequence_number>` then `data: <JSON>`
 * then a blank line; comments for keepalives; `data: [DONE]` before the close.
 */
import type { ServerResponse } from 'node:http';
import type { StreamEvent } from '../../workflows/definitions';

/** The bytes of one event. */
export function formatEvent(event: StreamEvent): string {
  return `id: ${event.sequence_number}\ndata: ${JSON.stringify(event)}\n\n`;
}

export const KEEPALIVE = ': keepalive\n\n';
export const DONE = 'data: [DONE]\n\n';

/** Writes the SSE status line and headers; nothing may compress or buffer the stream on its way. */
export function writeSseHead(res: ServerResponse): void {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no', // nginx and friends: do not buffer
  });
  res.flushHeaders();
}
