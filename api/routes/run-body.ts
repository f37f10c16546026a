/** The body of an answer that is a run: its view, or a finished big run's view as a JSON byte stream (D31). */
import { Readable } from 'node:stream';
import type { Context } from 'koa';
import type { RunView } from '../../domain/run-view';

/** Sets `body` as the answer's body (koa serializes a view; a stream is sent as it is read). */
export function sendRun(ctx: Context, body: RunView | Readable): void {
  if (body instanceof Readable) ctx.type = 'application/json';
  ctx.body = body;
}
