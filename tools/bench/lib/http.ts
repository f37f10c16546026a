/**
 * The load generator's HTTP client: node:http with a keep-alive agent per load (no extra
 * dependency, and cheaper per request than fetch), plus a lean SSE reader for thousands of
 * concurrent streams. Loopback only: every URL comes from a child this process started.
 */
import http from 'node:http';

export interface JsonResponse<T = any> {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: T;
}

export function keepAliveAgent(maxSockets: number): http.Agent {
  return new http.Agent({
    keepAlive: true,
    maxSockets,
    maxFreeSockets: maxSockets,
    scheduling: 'fifo',
  });
}

/** One JSON request; rejects on network errors only (any status resolves). */
export function requestJson<T = any>(
  agent: http.Agent,
  baseUrl: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<JsonResponse<T>> {
  const url = new URL(path, baseUrl);
  assertLoopback(url);
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const headers: Record<string, string | number> = { accept: 'application/json', ...opts.headers };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = Buffer.byteLength(payload);
  }
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : null;
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: body as T });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

export function assertLoopback(url: URL): void {
  if (!['127.0.0.1', 'localhost', '[::1]', '::1'].includes(url.hostname)) {
    throw new Error(`refusing a non-loopback address: ${url.href}`);
  }
}

export interface SseEventArrival {
  /** Parsed `data:` JSON (never `[DONE]`). */
  event: any;
  /** Date.now() when the frame was parsed. */
  at: number;
}

export interface SseStream {
  status: number;
  events: SseEventArrival[];
  /** Resolves when the server closes the stream (or it errors). */
  closed: Promise<void>;
  done: boolean;
  close(): void;
}

/**
 * Opens a GET SSE stream on its own socket and records every data event with its arrival time,
 * or, with `onEvent`, hands each to it and keeps none (millions of events: P4c's replay).
 */
export function openSse(
  agent: http.Agent,
  baseUrl: string,
  path: string,
  key: string,
  onEvent?: (event: any) => void,
): Promise<SseStream> {
  const url = new URL(path, baseUrl);
  assertLoopback(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: 'GET',
        headers: { accept: 'text/event-stream', authorization: `Bearer ${key}` },
      },
      (res) => {
        const events: SseEventArrival[] = [];
        let buffer = '';
        let resolveClosed!: () => void;
        const closed = new Promise<void>((r) => (resolveClosed = r));
        const stream: SseStream = {
          status: res.statusCode ?? 0,
          events,
          closed,
          done: false,
          close: () => req.destroy(),
        };
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          buffer += text;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const at = Date.now();
            for (const line of block.split('\n')) {
              if (!line.startsWith('data: ')) continue;
              const data = line.slice(6);
              if (data === '[DONE]') stream.done = true;
              else if (onEvent) onEvent(JSON.parse(data));
              else events.push({ event: JSON.parse(data), at });
            }
          }
        });
        const finish = () => resolveClosed();
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
        resolve(stream);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
