/** HTTP or, with a certificate configured, HTTPS (D21) serving of the app. */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import type { Config } from '../config';
import { requestScope } from './last-resort';
import type { ErrorCode } from './errors/codes';

export interface RunningServer {
  server: http.Server;
  url: string;
  /**
   * Stops accepting, lets requests in flight finish for up to `graceMs`, then closes every socket.
   * Resolves when the last connection is closed, with what was in flight and what had to be cut.
   */
  close(graceMs?: number): Promise<CloseStats>;
}

export interface CloseStats {
  /** Requests (streams included) being answered when the listener closed. */
  inFlight: number;
  /** Of those, the ones still unfinished when the grace ran out (their sockets were cut). */
  cut: number;
}

/** Listens on the configured host and port (0 picks a free one) and resolves with the base URL. */
export async function listen(app: Koa, config: Pick<Config, 'api'>): Promise<RunningServer> {
  const koaHandler = app.callback();
  // Answers in progress, so a shutdown knows when the last one is over (close below).
  const inFlight = new Set<http.ServerResponse>();
  let closing: (() => void) | undefined; // set by close: called whenever an answer ends
  // Each request runs in its scope, so an error that escapes it is still answered (api/last-resort.ts).
  const handler: http.RequestListener = (req, res) => {
    inFlight.add(res);
    res.once('close', () => {
      inFlight.delete(res);
      closing?.();
    });
    // A request on a kept-alive connection after the listener closed: its connection ends with it.
    if (closing) res.setHeader('Connection', 'close');
    requestScope.run({ req, res }, koaHandler, req, res);
  };
  const { tls } = config.api;
  const { headersMs, requestMs, idleMs } = config.api.timeouts;
  // Connection bounds (docs/api.md "Connections"). Node's requestTimeout covers receiving the
  // request, headers and body, and ends once the body is complete: an answer that lasts (an SSE
  // stream, a download) is not bound by it. It is checked every `connectionsCheckingInterval`.
  const options: http.ServerOptions = {
    headersTimeout: headersMs,
    requestTimeout: requestMs,
    connectionsCheckingInterval: Math.max(
      100,
      Math.min(5_000, Math.floor(Math.min(headersMs, requestMs || headersMs) / 4)),
    ),
  };
  const server = tls
    ? https.createServer(
        { ...options, cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) },
        handler,
      )
    : http.createServer(options, handler);
  server.on('clientError', answerClientError);
  server.on('checkExpectation', answerExpectation);
  server.on('connect', answerConnect);
  // Inactivity (no byte either way) while a request is received or a plain answer is sent: a
  // client that stalls its body or stops reading a download. Streams turn it off for their
  // socket (api/stream/open-stream.ts): they have keepalives and a buffer limit of their own.
  if (idleMs > 0) server.setTimeout(idleMs, answerIdle);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.api.port, config.api.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const host = config.api.host.includes(':') ? `[${config.api.host}]` : config.api.host;
  return {
    server,
    url: `${tls ? 'https' : 'http'}://${host}:${port}`,
    close: (graceMs = 5_000) =>
      new Promise<CloseStats>((resolve) => {
        const stats: CloseStats = { inFlight: inFlight.size, cut: 0 };
        // Answers not begun yet close their connection when they are sent, so a kept-alive
        // client (a proxy) opens its next request elsewhere instead of here.
        for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
        // Stop accepting; requests in flight get `graceMs` to finish before their sockets are cut.
        const cut = setTimeout(() => {
          stats.cut = inFlight.size;
          server.closeAllConnections();
        }, graceMs);
        server.close(() => {
          clearTimeout(cut);
          resolve(stats);
        });
        // Each time an answer ends its connection is idle (a stream's or a kept-alive one's): close
        // it at once rather than at the grace's end. The check runs after Node marks it idle.
        closing = () => setImmediate(() => server.closeIdleConnections());
        server.closeIdleConnections();
      }),
  };
}

/**
 * Requests Node's parser refuses before the app sees them (a request line or headers over
 * `maxHeaderSize`, malformed HTTP, a request not received within the request timeout) get the
 * envelope and CORS too (D22), not Node's bare status line.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  // Node's own handler does the same check: nothing can be written on a reset or half-answered socket.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, code, message]: [number, ErrorCode, string] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [
          431,
          'request_too_large',
          'The request line and headers are larger than the server accepts.',
        ]
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', REQUEST_TIMEOUT_MESSAGE]
        : [400, 'malformed_request', 'The request is not valid HTTP.'];
  socket.end(rawAnswer(status, code, message));
}

/** A whole answer in the envelope, with CORS, for a socket no ServerResponse writes to; it closes the connection. */
function rawAnswer(status: number, code: ErrorCode, message: string): string {
  const body = errorBody(message, code);
  return (
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Access-Control-Allow-Origin: *\r\n' +
    'Connection: close\r\n\r\n' +
    body
  );
}

/**
 * A request whose `Expect` is anything but `100-continue` (which Node answers by itself): Node
 * would send a bare 417 with no body. The envelope and CORS instead (D22); the connection is
 * closed, since a body the client may send anyway is never read.
 */
function answerExpectation(_req: http.IncomingMessage, res: http.ServerResponse): void {
  const body = errorBody(
    'The server meets no expectation but `Expect: 100-continue`.',
    'expectation_failed',
  );
  res.writeHead(417, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Access-Control-Allow-Origin': '*',
    Connection: 'close',
  });
  res.end(body);
}

/**
 * CONNECT (a proxy's tunnel): without a listener Node closes the socket without a word. This is
 * no proxy: 405 in the envelope (D22), and the connection ends with it.
 */
function answerConnect(_req: http.IncomingMessage, socket: Duplex): void {
  socket.on('error', () => socket.destroy()); // a client gone already: nothing to answer
  socket.end(rawAnswer(405, 'method_not_allowed', 'CONNECT is not served: this is no proxy.'));
}

const REQUEST_TIMEOUT_MESSAGE = 'The request was not received in time.';

function errorBody(message: string, code: ErrorCode): string {
  return JSON.stringify({ error: { message, type: 'invalid_request_error', code } });
}

/**
 * A socket idle past the idle timeout. A request still arriving (its body stalled) is answered
 * 408 in the envelope and the connection closed; anything else (an answer the client stopped
 * reading, an idle kept-alive connection) is cut.
 */
function answerIdle(socket: Socket): void {
  const res = (socket as Socket & { _httpMessage?: http.ServerResponse })._httpMessage;
  const req = res?.req;
  if (!res || !req || req.complete || res.headersSent || !socket.writable) {
    socket.destroy();
    return;
  }
  const body = errorBody(REQUEST_TIMEOUT_MESSAGE, 'request_timeout');
  res.writeHead(408, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Access-Control-Allow-Origin': '*',
    Connection: 'close',
  });
  res.end(body);
  // Closed once the answer is written, also if the client never reads it.
  socket.setTimeout(1_000, () => socket.destroy());
}
