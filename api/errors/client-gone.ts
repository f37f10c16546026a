/**
 * A request whose client went away before its body had all arrived (it reset or closed the
 * connection mid-body): nothing was done for it and nobody reads its answer. Every body reader
 * (JSON bodies, uploads) answers it as the client's doing, a 400, never as a server fault: a 500
 * is counted against WrsApiErrorRateHigh and logged with a stack, and a client can cut off as many
 * requests as its rate limit lets it start (docs/deploy.md "Monitoring").
 */
import type { IncomingMessage } from 'node:http';

/** Whether `err`, met while reading `req`'s body, is its client having gone away. */
export function clientWentAway(req: IncomingMessage, err: unknown): boolean {
  // A body read to its end was not cut off, whatever failed after.
  if (req.complete) return false;
  const e = err as { code?: unknown; message?: unknown } | undefined;
  return (
    e?.code === 'ECONNRESET' || e?.code === 'ERR_STREAM_PREMATURE_CLOSE' || e?.message === 'aborted'
  );
}
