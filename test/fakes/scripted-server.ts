/**
 * A misbehaving stand-in for the API (test/ only): an HTTP server on 127.0.0.1 whose request
 * number n is answered by `handler(req, res, n)`, so a client's test can script what a proxy, a
 * load balancer or an API restart does (drop a connection, answer 503 with any Retry-After, send
 * odd line ends). `log` records each request as it arrived.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type ScriptedHandler = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  n: number,
) => unknown;

export interface LoggedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

export interface ScriptedServer {
  url: string;
  log: LoggedRequest[];
  close(): Promise<void>;
}

export async function scriptedServer(handler: ScriptedHandler): Promise<ScriptedServer> {
  const log: LoggedRequest[] = [];
  const server = http.createServer((req, res) => {
    const n = log.length;
    log.push({ method: req.method!, url: req.url!, headers: req.headers });
    void handler(req, res, n);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    log,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers with the API's error envelope. */
export function errorAnswer(
  res: http.ServerResponse,
  status: number,
  error: { type: string; code?: string; message: string },
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error }));
}

/** Answers 200 with `body` as JSON. */
export function jsonAnswer(res: http.ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Starts an SSE answer. */
export function sseHead(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
}

/** One SSE block of `event`, with its sequence number as the id when it has one. */
export function sseFrame(
  event: { type: string; sequence_number?: number; [field: string]: unknown },
  eol = '\n',
): string {
  const id = event.sequence_number === undefined ? '' : `id: ${event.sequence_number}${eol}`;
  return `${id}data: ${JSON.stringify(event)}${eol}${eol}`;
}
