/** HTTP or, with a certificate configured, HTTPS (D21) serving of the app. */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type Koa from 'koa';
import type { Config } from '../config';

export interface RunningServer {
  server: http.Server;
  url: string;
  /** Stops accepting, lets requests in flight finish for up to `graceMs`, then closes every socket. */
  close(graceMs?: number): Promise<void>;
}

/** Listens on the configured host and port (0 picks a free one) and resolves with the base URL. */
export async function listen(app: Koa, config: Pick<Config, 'api'>): Promise<RunningServer> {
  const handler = app.callback();
  const { tls } = config.api;
  const server = tls
    ? https.createServer(
        { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) },
        handler,
      )
    : http.createServer(handler);
  server.on('clientError', answerClientError);
  // SSE streams are long-lived; the socket must not be cut by Node's default request timeout.
  server.requestTimeout = 0;
  server.headersTimeout = 30_000;
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
      new Promise<void>((resolve) => {
        // Stop accepting; requests in flight get `graceMs` to finish before their sockets are cut.
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), graceMs).unref();
      }),
  };
}

/**
 * Requests Node's parser refuses before the app sees them (a request line or headers over
 * `maxHeaderSize`, malformed HTTP) get the envelope and CORS too (D22), not Node's bare status line.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  // Node's own handler does the same check: nothing can be written on a reset or half-answered socket.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [
          431,
          'request_too_large',
          'The request line and headers are larger than the server accepts.',
        ]
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'The request was not received in time.']
        : [400, 'malformed_request', 'The request is not valid HTTP.'];
  const body = JSON.stringify({ error: { message, type: 'invalid_request_error', code } });
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Access-Control-Allow-Origin: *\r\n' +
      'Connection: close\r\n\r\n' +
      body,
  );
}
