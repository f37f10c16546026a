/** The body of an answer that is a run: its view, or a finished big run's view as a JSON byte stream (D31). */
import { Readable } from 'node:stream';
import type { Context } from 'koa';
import type { RunView } from '../../domain/run-view';
import type { KeyCap } from '../limits/key-cap';

/**
 * Sets `body` as the answer's body (koa serializes a view; a stream is sent as it is read). A
 * stream is a finished big run read whole, as much work as a results file: it holds one of the
 * key's download slots until its answer ends (api/runs/download-cap.ts, D40), refused with 429
 * `too_many_downloads` before any item is read.
 */
export function sendRun(ctx: Context, body: RunView | Readable, downloads: KeyCap): void {
  if (body instanceof Readable) {
    try {
      ctx.res.once('close', downloads.take(ctx.state.auth!.keyId));
    } catch (err) {
      body.destroy(); // nothing was read: its generator never ran
      throw err;
    }
    ctx.type = 'application/json';
  }
  ctx.body = body;
}
