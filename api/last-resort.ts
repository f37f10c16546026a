/**
 * The API process's last line of defence: no request can take the process down.
 *
 * Every request runs inside `requestScope` (api/server.ts), so an exception that escapes the
 * request's promise chain (an 'error' event nobody listens for, a throw in a timer or stream
 * callback the request started) still knows which request it belongs to. The process-wide
 * handlers installed by the API's entry (`api/main.ts`) then:
 *
 * - **uncaughtException inside a request**: log it, answer that request 500 in the envelope if
 *   its head is not out yet (else cut its connection), and keep serving. Node's advice is to
 *   restart after an uncaught exception because shared state may be half-changed; here the
 *   state such an error can reach is the request's own (its body, its streams, its socket),
 *   while a restart would cut every other tenant's requests and streams. One hostile request
 *   must not be a denial of service for everyone.
 * - **uncaughtException outside any request** (start-up, a connection pool, a shared timer):
 *   log it and keep serving too. Exiting would not make the service more correct: every
 *   store and Temporal call has a deadline and every cache expires, and a process that keeps
 *   failing shows it on `/readyz` and in its error logs, where an operator (or an orchestrator's
 *   probe) restarts it. A crash loop on every stray exception would be worse.
 * - **unhandledRejection**: log it and keep serving. The code that rejected has unwound already;
 *   nothing is half-done but the promise nobody awaited.
 *
 * Each is logged at `error` with `last_resort: true`, so an alert can count them: any is a bug.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import http from 'node:http';
import type { Logger } from './logger';

export interface RequestScope {
  req: http.IncomingMessage;
  res: http.ServerResponse;
}

/** The request whose code is running (set for each request by api/server.ts). */
export const requestScope = new AsyncLocalStorage<RequestScope>();

const BODY = JSON.stringify({
  error: {
    message: 'The server had an error while processing your request.',
    type: 'server_error',
  },
});

/** Answers `scope`'s request 500 in the envelope when nothing of the answer is out yet, else cuts it. */
export function failRequest(scope: RequestScope): void {
  const { res } = scope;
  try {
    if (!res.headersSent && !res.writableEnded && !res.destroyed) {
      // `Connection: close`: the request's body may be half-read; its socket is not reused.
      res.writeHead(500, {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(BODY),
        'Access-Control-Allow-Origin': '*',
        Connection: 'close',
      });
      res.end(BODY);
    } else {
      res.destroy();
    }
  } catch {
    res.destroy();
  }
}

/** Installs the process-wide handlers (once per process; the API's entry calls it). */
export function installLastResort(logger: Logger): void {
  process.on('uncaughtException', (err, origin) => {
    const scope = requestScope.getStore();
    logger.error(
      {
        err,
        origin,
        last_resort: true,
        ...(scope ? { method: scope.req.method, path: pathOf(scope.req) } : {}),
      },
      scope ? 'uncaught exception in a request' : 'uncaught exception',
    );
    if (scope) failRequest(scope);
  });
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason, last_resort: true }, 'unhandled promise rejection');
  });
}

/** The path without its query string (query strings may hold link signatures: never logged). */
function pathOf(req: http.IncomingMessage): string {
  return (req.url ?? '').split('?')[0].slice(0, 200);
}
