/**
 * Follows a run's Server-Sent Events with fetch (EventSource cannot send an Authorization
 * header). When the connection drops it reconnects to GET /api/v1/runs/{id}/stream with
 * `Last-Event-ID`, never repeating the start; a 204 there means the run ended meanwhile.
 */
import { isTerminalEvent, type StreamEvent } from '../../domain/run';
import { ErrorAnswer, errorAnswer, authHeaders } from './api';

const MAX_FAILURES = 8;

export interface FollowOptions {
  /** A start request: POSTed once with `stream: true`. */
  start?: Record<string, unknown>;
  /** Or an existing run, followed from its first event on. */
  runId?: string;
  signal: AbortSignal;
  onEvent(event: StreamEvent): void;
  /** The connection dropped; the `attempt`-th reconnect follows. */
  onReconnect(attempt: number, lastId: number | undefined): void;
}

/** Yields the `data:` and `id:` of each SSE block of a response body (comments and keepalives skipped). */
async function* frames(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ id?: string; data: string }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const lines = buffer.slice(0, end).split('\n');
      buffer = buffer.slice(end + 2);
      const field = (name: string) =>
        lines
          .filter((l) => l.startsWith(`${name}:`))
          .map((l) => l.slice(name.length + 1).replace(/^ /, ''));
      const data = field('data');
      if (data.length > 0) yield { id: field('id').at(-1), data: data.join('\n') };
    }
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), {
      once: true,
    });
  });

/**
 * Streams a run to its end and returns its id. Resolves once the terminal event arrived, or a
 * resume answered 204 (the run is over: read the record). Throws ErrorAnswer when the start is
 * refused, or when reconnecting keeps failing.
 */
export async function followRun(o: FollowOptions): Promise<string> {
  let runId = o.runId;
  let lastId: number | undefined;
  let failures = 0;
  for (;;) {
    let res: Response | undefined;
    try {
      res =
        runId === undefined
          ? await fetch('/api/v1/responses', {
              method: 'POST',
              headers: {
                ...authHeaders(),
                'Content-Type': 'application/json',
                Accept: 'text/event-stream',
              },
              body: JSON.stringify({ ...o.start, stream: true }),
              signal: o.signal,
            })
          : await fetch(
              `/api/v1/runs/${encodeURIComponent(runId)}/stream${lastId === undefined ? '?starting_after=0' : ''}`,
              {
                headers: {
                  ...authHeaders(),
                  Accept: 'text/event-stream',
                  ...(lastId === undefined ? {} : { 'Last-Event-ID': String(lastId) }),
                },
                signal: o.signal,
              },
            );
    } catch (err) {
      if (o.signal.aborted || runId === undefined) throw err; // a start that never arrived is not repeated blindly
    }
    if (res?.status === 204) return runId!; // resumed at or after the terminal event: nothing more will come
    if (res && !res.ok) {
      const err = errorAnswer(res.status, await res.text());
      if (runId === undefined || !err.retryable) throw err;
    }
    try {
      for await (const frame of res?.ok && res.body ? frames(res.body) : []) {
        if (frame.data === '[DONE]') return runId!;
        const event = JSON.parse(frame.data) as StreamEvent;
        if (event.type === 'response.created') runId = event.response.run_id;
        if (event.type !== 'response.resumed') {
          if (lastId !== undefined && event.sequence_number <= lastId) continue; // already shown
          lastId = event.sequence_number;
        }
        failures = 0;
        o.onEvent(event);
        if (isTerminalEvent(event)) return runId!;
      }
    } catch (err) {
      if (o.signal.aborted) throw err;
      // the connection dropped mid-stream: reconnect below
    }
    if (runId === undefined) throw new Error('The stream ended before the run was created.');
    if (++failures > MAX_FAILURES)
      throw new ErrorAnswer(503, `Lost the stream of ${runId}; reopen it from Recent runs.`);
    o.onReconnect(failures, lastId);
    await sleep(Math.min(5_000, 400 * failures), o.signal);
  }
}
