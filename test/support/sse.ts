/** A test SSE client over fetch: keeps the raw bytes (for byte-exact checks) and parses frames as they arrive. */
export interface SseFrame {
  id?: string;
  data?: string;
  comment?: string;
  /** The `retry:` field (ms), when the block carries one. */
  retry?: number;
  /** Parsed JSON of `data`, unless it is `[DONE]`. */
  event?: any;
  at: number;
}

export interface SseClient {
  status: number;
  headers: Headers;
  frames: SseFrame[];
  raw: () => string;
  /** Resolves when the server closes the stream. */
  closed: Promise<void>;
  /** Waits until a frame satisfies `match` and returns it. */
  until(match: (frame: SseFrame) => boolean, timeoutMs?: number): Promise<SseFrame>;
  abort(): void;
}

/** Opens a stream with fetch; JSON error answers are returned with `frames` empty and `json` set (undefined for a 204). */
export async function openSse(
  url: string,
  init: { method?: string; key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<SseClient & { json?: any }> {
  const controller = new AbortController();
  const headers: Record<string, string> = { accept: 'text/event-stream', ...init.headers };
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: controller.signal,
  });
  const frames: SseFrame[] = [];
  const waiters = new Set<() => void>();
  let raw = '';
  let buffer = '';
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      frames,
      raw: () => text,
      closed: Promise.resolve(),
      until: () => Promise.reject(new Error('not a stream')),
      abort: () => undefined,
      json: text ? JSON.parse(text) : undefined,
    };
  }
  const decoder = new TextDecoder();
  let ended = false;
  const closed = (async () => {
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(chunk, { stream: true });
        raw += text;
        buffer += text;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const frame: SseFrame = { at: Date.now() };
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) frame.comment = line.slice(1).trim();
            else if (line.startsWith('id: ')) frame.id = line.slice(4);
            else if (line.startsWith('data: ')) frame.data = line.slice(6);
            else if (line.startsWith('retry: ')) frame.retry = Number(line.slice(7));
          }
          if (frame.data && frame.data !== '[DONE]') frame.event = JSON.parse(frame.data);
          frames.push(frame);
          for (const wake of [...waiters]) wake();
        }
      }
    } catch (err) {
      // Aborted by us, or the server dropped the connection ("terminated"): both just end the stream.
      if ((err as Error).name !== 'AbortError' && (err as Error).message !== 'terminated')
        throw err;
    } finally {
      ended = true;
      for (const wake of [...waiters]) wake();
    }
  })();
  const until = (match: (f: SseFrame) => boolean, timeoutMs = 20_000) =>
    new Promise<SseFrame>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(
          new Error(
            `no matching SSE frame within ${timeoutMs} ms; got ${frames.map((f) => f.data ?? `:${f.comment}`).join(' | ')}`,
          ),
        );
      }, timeoutMs);
      const check = () => {
        const found = frames.find(match);
        if (found || ended) {
          clearTimeout(timer);
          waiters.delete(check);
          if (found) resolve(found);
          else reject(new Error('stream closed without a matching frame'));
        }
      };
      waiters.add(check);
      check();
    });
  return {
    status: res.status,
    headers: res.headers,
    frames,
    raw: () => raw,
    closed,
    until,
    abort: () => controller.abort(),
  };
}

/** The data events of a stream (no comments, no [DONE]). */
export function events(client: SseClient): any[] {
  return client.frames.filter((f) => f.event).map((f) => f.event);
}
