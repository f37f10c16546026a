/** A small HTTP client for tests: JSON in, parsed JSON and headers out. */
import type { IncomingMessage } from 'node:http';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** Longer than any answer the service gives (the store's socket timeout is 60 s). */
const CALL_TIMEOUT_MS = 90_000;

/** Calls the API with an optional bearer key; `body` objects are sent as JSON, strings as-is. */
export async function call<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  // The service answers every request in bounded time (store and Temporal calls all have deadlines):
  // a request still unanswered after this long is a hang, reported as one (not as mocha's timeout).
  const timeoutMs = opts.timeoutMs ?? CALL_TIMEOUT_MS;
  let res: Response;
  try {
    res = await fetch(baseUrl + path, {
      method,
      headers,
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    if ((err as Error).name === 'TimeoutError')
      throw new Error(`${method} ${path.slice(0, 120)}: no answer within ${timeoutMs} ms`);
    throw err;
  }
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // leave non-JSON bodies as text
  }
  return { status: res.status, headers: res.headers, body: parsed as T };
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(
  check: () => Promise<T | undefined>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${opts.what ?? 'condition'}`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
  }
}

/** Reads a node:http answer into an ApiResponse, for tests that must send what fetch cannot (raw paths, chunked bodies). */
export function readResponse(res: IncomingMessage): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('error', reject);
    res.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const headers = new Headers();
      for (const [name, value] of Object.entries(res.headers))
        if (typeof value === 'string') headers.set(name, value);
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // keep text
      }
      resolve({ status: res.statusCode!, headers, body });
    });
  });
}
