/**
 * A typed client of the Workflow Run Service for Node 18+ and browsers (only `fetch` and
 * streams). It follows the spec's client rules: poll every 1–3 s, and when a stream drops,
 * reconnect with GET /runs/{id}/stream and Last-Event-ID — never repeat the POST.
 */
import type { AsyncStartResponse, StartRequest } from '../../api/contract/request-schemas';
import type {
  AccountView,
  DeletedFile,
  DeletedRun,
  FileList,
  FileView,
  OutputItemList,
  StreamLink,
} from '../../api/contract/response-schemas';
import type { StreamErrorEvent } from '../../api/stream/stream-events';
import type { RunView } from '../../domain/run-view';
import { isTerminal, isTerminalEvent, type OutputItem, type StreamEvent } from '../../domain/run';

export type {
  AccountView as Account,
  AsyncStartResponse,
  DeletedFile,
  DeletedRun,
  FileList,
  FileView as File,
  OutputItem,
  OutputItemList,
  RunView as Run,
  StreamEvent,
  StreamLink,
};
export type StartOptions = Omit<StartRequest, 'stream'> & { stream?: never } & {
  /** D18: a start's key; without one the client makes its own (see `newIdempotencyKey`). */
  idempotencyKey?: string;
};

/** The 202 answer of a start or re-run, with the Idempotency-Key it was sent with (retry with it). */
export type Started = AsyncStartResponse & { idempotencyKey: string };

/** The filters of `list` (D23, D37); times as Date or ISO 8601 text. */
export interface ListRunsOptions {
  limit?: number;
  starting_after?: string;
  status?: 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
  /** A `wf_...` id or a slug. */
  workflow_id?: string;
  /** The older spelling of `workflow_id`. */
  workflowId?: string;
  created_after?: Date | string;
  created_before?: Date | string;
  /** Runs whose metadata holds every one of these pairs. */
  metadata?: Record<string, string>;
}

/** A page of runs. */
export interface RunList {
  object: 'list';
  data: RunView[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** What every method takes besides its own arguments. */
export interface RequestOptions {
  /** Aborts the request (and a `wait()` or a stream's reconnects): the call rejects with its reason. */
  signal?: AbortSignal;
}

/** An error answer of the API, with the envelope's fields. */
export class WrsApiError extends Error {
  /** The answer's `X-Request-Id`: quote it when asking about a request. */
  readonly requestId?: string;
  /** The answer's body as parsed (the error envelope), or null when it was not JSON. */
  readonly body?: unknown;

  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly code?: string,
    readonly param?: string,
    /** Seconds the server asked to wait (`Retry-After` of a 429 or 503). */
    readonly retryAfterSeconds?: number,
    extra: { requestId?: string; body?: unknown; idempotencyKey?: string } = {},
  ) {
    super(message);
    this.name = 'WrsApiError';
    this.requestId = extra.requestId;
    this.body = extra.body;
    this.idempotencyKey = extra.idempotencyKey;
  }

  /** A start's or re-run's Idempotency-Key: a retry with it never starts a second run (D18). */
  readonly idempotencyKey?: string;

  /** A 429 or 503: the same request may succeed later (a 503 means Temporal or MongoDB is briefly unreachable). */
  get retryable(): boolean {
    return this.status === 429 || this.status === 503;
  }
}

/**
 * A start or re-run whose answer was lost (the connection failed after it was sent, or a stream
 * ended before its run was created): the run may have started. Retry with `idempotencyKey`,
 * which answers with that run if it did, and starts it if it did not (D18). `cause` is the
 * network error.
 */
export class WrsConnectionError extends Error {
  constructor(
    message: string,
    readonly idempotencyKey: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'WrsConnectionError';
  }
}

/**
 * A fresh Idempotency-Key (`wrs-client-<uuid>`), what the client sends with a start, stream or
 * re-run given none, as the OpenAI and Stripe SDKs do: without one, retrying a start whose
 * answer was lost starts (and bills) a second run.
 */
export function newIdempotencyKey(): string {
  const uuid =
    globalThis.crypto?.randomUUID?.() ??
    // Node 18 has no global crypto; 122 random bits stay unique enough for keys that live 24 h.
    'xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx'.replace(/[xy]/g, (c) =>
      ((Math.random() * 16) | (c === 'y' ? 8 : 0)).toString(16).slice(-1),
    );
  return `wrs-client-${uuid}`;
}

/**
 * How long to wait before retrying after `err`: the server's Retry-After when it gave one, else
 * `fallbackMs`. The service always asks for 1 s or more; a 0 from a proxy or load balancer in
 * front of it would make a hot loop, so it is kept within 1–60 s.
 */
function retryDelayMs(err: unknown, fallbackMs: number): number {
  const seconds = err instanceof WrsApiError ? err.retryAfterSeconds : undefined;
  return seconds !== undefined ? Math.min(60_000, Math.max(1_000, seconds * 1000)) : fallbackMs;
}

/**
 * The seconds a Retry-After header asks for: a non-negative integer, or an HTTP-date (seconds
 * until then, 0 once past). Anything else (negative, empty, fractional, text) counts as none.
 */
function parseRetryAfter(header: string | null): number | undefined {
  const value = header?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const at = /GMT$/.test(value) ? Date.parse(value) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

export interface ClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
}

/** Waits `ms`, or rejects with `signal`'s reason once it aborts (at once if it already has); leaves no listener behind. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The parts of a request besides its method and path. */
interface Send extends RequestOptions {
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as it is (an upload). */
  raw?: RequestInit['body'];
  headers?: Record<string, string>;
  /** A start's key: sent as Idempotency-Key, and carried by the errors of the request. */
  idempotencyKey?: string;
}

export class WrsClient {
  private readonly base: string;
  private readonly fetchFn: typeof fetch;

  constructor(private readonly opts: ClientOptions) {
    this.base = opts.baseUrl.replace(/\/$/, '');
    this.fetchFn = opts.fetch ?? fetch.bind(globalThis);
  }

  /**
   * Starts a run in async mode. It is sent with `idempotencyKey`, or a key of the client's own;
   * the answer and any error (`WrsApiError`, `WrsConnectionError`) carry it, so a retry with it
   * never starts a second run.
   */
  async start(request: StartOptions, opts: RequestOptions = {}): Promise<Started> {
    const { idempotencyKey = newIdempotencyKey(), ...body } = request;
    const started = await this.json<AsyncStartResponse>('POST', '/api/v1/responses', {
      body,
      idempotencyKey,
      signal: opts.signal,
    });
    return { ...started, idempotencyKey };
  }

  /**
   * D38: re-runs a run: a new run of the same version, inputs, metadata and webhook, whose
   * `parent_run_id` names it. `items: 'failed'` (a finished run) runs only its failed items again
   * and carries the completed ones over, billing only what runs; `'all'` (the default) runs it whole.
   * Its Idempotency-Key is handled as `start`'s.
   */
  async rerun(
    runId: string,
    opts: { items?: 'failed' | 'all'; idempotencyKey?: string } & RequestOptions = {},
  ): Promise<Started> {
    const { idempotencyKey = newIdempotencyKey(), items, signal } = opts;
    const started = await this.json<AsyncStartResponse>(
      'POST',
      `/api/v1/runs/${encodeURIComponent(runId)}/rerun`,
      { body: { items: items ?? 'all' }, idempotencyKey, signal },
    );
    return { ...started, idempotencyKey };
  }

  /**
   * Reads a run. `includeOutput: false` reads it without its items (`output: null`): a finished
   * big run's answer holds every item, so poll such a run this way and page its items (`items`).
   */
  get(
    runId: string,
    { includeOutput = true, signal }: { includeOutput?: boolean } & RequestOptions = {},
  ): Promise<RunView> {
    const query = queryString({ include_output: includeOutput ? undefined : 'false' });
    return this.json('GET', `/api/v1/runs/${encodeURIComponent(runId)}${query}`, { signal });
  }

  /**
   * Lists runs, newest first (D23), filtered (D37, all AND-ed) by status, workflow (id or slug),
   * creation time and metadata pairs (`metadata: {order_id: 'ord_1'}` → `metadata[order_id]=ord_1`).
   */
  list(query: ListRunsOptions = {}, opts: RequestOptions = {}): Promise<RunList> {
    const { metadata, created_after, created_before, ...rest } = query;
    const time = (t: Date | string | undefined) => (t instanceof Date ? t.toISOString() : t);
    const params = new URLSearchParams(
      [
        ...Object.entries({
          ...rest,
          created_after: time(created_after),
          created_before: time(created_before),
        }),
        ...Object.entries(metadata ?? {}).map(([k, v]) => [`metadata[${k}]`, v]),
      ]
        .filter(([, v]) => v !== undefined)
        .map(([k, v]): [string, string] => [String(k), String(v)]),
    );
    return this.json('GET', `/api/v1/runs${params.size ? `?${params}` : ''}`, opts);
  }

  /** Every run of the filter, page by page (`pageSize` 1–100). */
  async *runs(
    query: Omit<ListRunsOptions, 'starting_after' | 'limit'> & { pageSize?: number } = {},
    opts: RequestOptions = {},
  ): AsyncGenerator<RunView> {
    const { pageSize, ...filters } = query;
    let after: string | undefined;
    for (;;) {
      const page = await this.list(
        { ...filters, limit: pageSize ?? 100, starting_after: after },
        opts,
      );
      yield* page.data;
      if (!page.has_more || !page.last_id) return;
      after = page.last_id;
    }
  }

  /**
   * D39: deletes a run (a live one is cancelled first): afterwards every read of it is 404 and
   * its inputs and outputs are gone from the service for good.
   */
  delete(runId: string, opts: RequestOptions = {}): Promise<DeletedRun> {
    return this.json('DELETE', `/api/v1/runs/${encodeURIComponent(runId)}`, opts);
  }

  /**
   * D19: uploads a file as the raw body (a browser's `File` or any Blob, bytes or text; in Node
   * `fs.openAsBlob(path)` streams one from disk). The service sniffs its type; give the `id` as
   * a file, image or video input, or a `json` input of rows (D35).
   */
  upload(
    content: Blob | ArrayBuffer | Uint8Array | string,
    opts: { name?: string } & RequestOptions = {},
  ): Promise<FileView> {
    // A browser's File carries its name (`File` is global in browsers and Node 20+).
    const name =
      opts.name ??
      (typeof File !== 'undefined' && content instanceof File ? content.name : undefined);
    return this.json('POST', `/api/v1/files${name ? `?name=${encodeURIComponent(name)}` : ''}`, {
      headers: { 'content-type': 'application/octet-stream' },
      // fetch sends any Uint8Array (a Node Buffer too); the DOM's types ask for one over an ArrayBuffer.
      raw: content as RequestInit['body'],
      signal: opts.signal,
    });
  }

  /** D19: a file of your account with a fresh signed link. */
  getFile(fileId: string, opts: RequestOptions = {}): Promise<FileView> {
    return this.json('GET', `/api/v1/files/${encodeURIComponent(fileId)}`, opts);
  }

  /** D19: one page of your uploads, newest first. */
  listFiles(
    query: { limit?: number; starting_after?: string } = {},
    opts: RequestOptions = {},
  ): Promise<FileList> {
    return this.json('GET', `/api/v1/files${queryString(query)}`, opts);
  }

  /** D19: deletes an upload, freeing its room in the storage quota; a run's own file goes with its run. */
  deleteFile(fileId: string, opts: RequestOptions = {}): Promise<DeletedFile> {
    return this.json('DELETE', `/api/v1/files/${encodeURIComponent(fileId)}`, opts);
  }

  /** D41: your account: its credit (balance, held by runs in progress, available) and its storage quotas. */
  account(opts: RequestOptions = {}): Promise<AccountView> {
    return this.json('GET', '/api/v1/account', opts);
  }

  /** D31: one page of a run's output `key` (live or finished), in output order. */
  listItems(
    runId: string,
    key: string,
    query: { limit?: number; starting_after?: string } = {},
    opts: RequestOptions = {},
  ): Promise<OutputItemList> {
    return this.json(
      'GET',
      `/api/v1/runs/${encodeURIComponent(runId)}/outputs/${encodeURIComponent(key)}${queryString(query)}`,
      opts,
    );
  }

  /**
   * D31: every item of a run's output `key`, page by page (`pageSize` 1–1,000), so a
   * 100,000-item output is read without holding it whole. For a finished run; a live run yields
   * the items opened so far, unfinished ones as `running`.
   */
  async *items(
    runId: string,
    key: string,
    opts: { pageSize?: number } & RequestOptions = {},
  ): AsyncGenerator<OutputItem> {
    let after: string | undefined;
    for (;;) {
      const page = await this.listItems(
        runId,
        key,
        { limit: opts.pageSize ?? 1_000, starting_after: after },
        { signal: opts.signal },
      );
      yield* page.data;
      if (!page.has_more || !page.last_id) return;
      after = page.last_id;
    }
  }

  /**
   * D35: the results file: every item of a run's output `key` in order, streamed as JSON Lines
   * (`Accept: application/x-ndjson`) and parsed line by line, so a 1,000,000-item output is never
   * held whole. Also for a run that failed or was cancelled: the items it finished.
   */
  async *exportItems(
    runId: string,
    key: string,
    opts: RequestOptions = {},
  ): AsyncGenerator<OutputItem> {
    const bytes = this.resultsFile(runId, key, 'application/x-ndjson', opts.signal);
    for await (const line of lines(decodeText(bytes), /\n/g)) {
      if (line) yield JSON.parse(line) as OutputItem;
    }
  }

  /**
   * D35: the results file as CSV (`Accept: text/csv`, header `item_index,id,status,output,error`),
   * its bytes as they arrive: in Node `await pipeline(client.exportCsv(id, key),
   * fs.createWriteStream('results.csv'))`, in a browser `new Blob(await Array.fromAsync(...))`.
   * API errors are raised before the first chunk.
   */
  async *exportCsv(
    runId: string,
    key: string,
    opts: RequestOptions = {},
  ): AsyncGenerator<Uint8Array> {
    yield* this.resultsFile(runId, key, 'text/csv', opts.signal);
  }

  /** The bytes of an output's results file in the format `accept` names (D35), as they arrive. */
  private async *resultsFile(
    runId: string,
    key: string,
    accept: string,
    signal?: AbortSignal,
  ): AsyncGenerator<Uint8Array> {
    const res = await this.request(
      'GET',
      `/api/v1/runs/${encodeURIComponent(runId)}/outputs/${encodeURIComponent(key)}`,
      { headers: { accept }, signal },
    );
    if (res.body) yield* res.body as unknown as AsyncIterable<Uint8Array>;
  }

  /** Requests cancellation (D8); the run turns `cancelled` once it has stopped. */
  cancel(runId: string, opts: RequestOptions = {}): Promise<RunView> {
    return this.json('POST', `/api/v1/runs/${encodeURIComponent(runId)}/cancel`, opts);
  }

  /**
   * D34: a signed URL to the run's stream that works without the API key for at most an hour
   * (`ttlSeconds`, default 3600): mint it on a backend, hand it to a browser's `new EventSource(url)`.
   */
  streamLink(
    runId: string,
    opts: { ttlSeconds?: number } & RequestOptions = {},
  ): Promise<StreamLink> {
    return this.json('POST', `/api/v1/runs/${encodeURIComponent(runId)}/stream-link`, {
      body: opts.ttlSeconds === undefined ? {} : { ttl_seconds: opts.ttlSeconds },
      signal: opts.signal,
    });
  }

  /**
   * Polls until the run is terminal (every `intervalMs`, kept within the spec's 1–3 s). A 429 or
   * 503 answer (an outage of the service's backends) is waited out, as its Retry-After says. A
   * poll that gets no answer (an API process restarting, a rolling deploy) or a proxy's 502 or
   * 504 is tried again after a growing delay, up to `maxRetries` (10) times in a row; then its
   * error is thrown. A poll is a GET, so trying it again is always safe. The run comes with its
   * output; `includeOutput: false` polls without it (`output: null`), for a big run whose items
   * are better paged (`items`) or exported (`exportItems`) than held whole.
   */
  async wait(
    runId: string,
    opts: {
      intervalMs?: number;
      maxRetries?: number;
      includeOutput?: boolean;
    } & RequestOptions = {},
  ): Promise<RunView> {
    const interval = Math.min(3_000, Math.max(1_000, opts.intervalMs ?? 1_000));
    let failures = 0;
    for (;;) {
      let delay = interval;
      try {
        // A run's output is null until it has ended, so only the last poll's answer carries it.
        const run = await this.get(runId, {
          includeOutput: opts.includeOutput,
          signal: opts.signal,
        });
        if (isTerminal(run.status)) return run;
        failures = 0;
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        if (err instanceof WrsApiError && err.retryable) delay = retryDelayMs(err, interval);
        else if (lostPoll(err) && ++failures <= (opts.maxRetries ?? 10))
          delay = interval * failures;
        else throw err;
      }
      await sleep(delay, opts.signal);
    }
  }

  /**
   * Starts a streaming run, or (with `runId`) follows an existing one, yielding its events until
   * the terminal one. A dropped connection is resumed with GET .../stream and Last-Event-ID,
   * so every event is yielded exactly once; the start request is never repeated. The start is
   * sent with an Idempotency-Key (its own, or the client's), which an error before the run was
   * created carries, as `start`'s do. The stream's `error` event (the run was deleted, the key
   * revoked) is thrown as a WrsApiError with its code (`not_found`, `key_revoked`).
   */
  async *stream(
    start: StartOptions | { runId: string },
    opts: { maxReconnects?: number; reconnectDelayMs?: number } & RequestOptions = {},
  ): AsyncGenerator<StreamEvent> {
    let runId = 'runId' in start ? start.runId : undefined;
    let lastId: number | undefined;
    let failures = 0;
    const idempotencyKey =
      'runId' in start ? undefined : (start.idempotencyKey ?? newIdempotencyKey());
    for (;;) {
      let response: Response | undefined;
      let refused: unknown;
      if (runId === undefined) {
        const { idempotencyKey: _, ...body } = start as StartOptions;
        response = await this.request('POST', '/api/v1/responses', {
          body: { ...body, stream: true },
          idempotencyKey,
          signal: opts.signal,
        });
      } else {
        const headers: Record<string, string> =
          lastId === undefined ? {} : { 'Last-Event-ID': String(lastId) };
        try {
          response = await this.request(
            'GET',
            `/api/v1/runs/${encodeURIComponent(runId)}/stream${lastId === undefined ? '?starting_after=0' : ''}`,
            { headers, signal: opts.signal },
          );
        } catch (err) {
          // A reconnect may meet an API restarting (no answer) or an outage (503): both are waited out.
          if (opts.signal?.aborted || (err instanceof WrsApiError && !err.retryable)) throw err;
          refused = err;
        }
      }
      if (response?.status === 204) return; // D11: the cursor is the terminal event, nothing is left
      // Only an event of the log past the cursor is progress: a server or proxy that answers every
      // reconnect with `response.resumed` and closes must still run out of reconnects.
      let delivered = false;
      let dropped: unknown;
      let failed: WrsApiError | undefined;
      try {
        for await (const event of response ? parseSse(response) : []) {
          if (event === 'DONE') return;
          if (event.type === 'error') {
            failed = errorOfEvent(event); // the run was deleted, or the key revoked: no resuming
            break;
          }
          if (event.type === 'response.resumed') continue; // per connection, not part of the run's log
          if (event.type === 'response.created') runId = event.response.run_id;
          // An event outside the log (no sequence number) is passed on and leaves the cursor be.
          const seq = (event as { sequence_number?: number }).sequence_number;
          if (seq !== undefined) {
            if (lastId !== undefined && seq <= lastId) continue;
            lastId = seq;
            delivered = true;
          }
          yield event;
          if (isTerminalEvent(event)) return;
        }
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        dropped = err; // a dropped connection: fall through and reconnect
      }
      if (failed) throw failed;
      if (runId === undefined)
        throw new WrsConnectionError(
          'the stream ended before the run was created',
          idempotencyKey!,
          dropped === undefined ? {} : { cause: dropped },
        );
      // A 429/503 is the service saying "later", waited out for as long as it lasts (abort with `signal`).
      if (delivered) failures = 0;
      else if (!(refused instanceof WrsApiError)) failures++;
      if (failures > (opts.maxReconnects ?? 10))
        throw new Error(`gave up reconnecting to run ${runId}`);
      await sleep(
        retryDelayMs(refused, (opts.reconnectDelayMs ?? 500) * Math.max(1, failures)),
        opts.signal,
      );
    }
  }

  private async json<T>(method: string, path: string, send: Send = {}): Promise<T> {
    const { signal } = send;
    if (!signal)
      return (await lostAnswer((await this.request(method, path, send)).json(), send)) as T;
    // fetch keeps its listener on the signal it is given until it is garbage collected, so a
    // poll loop (wait) handing it the caller's own signal would pile up one per request: each
    // call gets a signal of its own, tied to the caller's only while it lasts.
    if (signal.aborted) throw signal.reason;
    const own = new AbortController();
    const onAbort = () => own.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await this.request(method, path, { ...send, signal: own.signal });
      return (await lostAnswer(res.json(), send)) as T;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** Sends `body` as JSON, or `raw` as it is (an upload); an error answer is thrown as a WrsApiError. */
  private async request(method: string, path: string, send: Send = {}): Promise<Response> {
    const { body, raw, headers = {}, signal, idempotencyKey } = send;
    const res = await lostAnswer(
      this.fetchFn(this.base + path, {
        method,
        signal,
        headers: {
          authorization: `Bearer ${this.opts.apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey }),
          ...headers,
        },
        body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
      }),
      send,
    );
    if (!res.ok) {
      const envelope = (await res.json().catch(() => null)) as {
        error?: { message?: string; type?: string; code?: string; param?: string };
      } | null;
      const e = envelope?.error;
      throw new WrsApiError(
        res.status,
        e?.type ?? 'server_error',
        e?.message ?? `HTTP ${res.status}`,
        e?.code,
        e?.param,
        parseRetryAfter(res.headers.get('retry-after')),
        { requestId: res.headers.get('x-request-id') ?? undefined, body: envelope, idempotencyKey },
      );
    }
    return res;
  }
}

/** A poll that may well succeed if sent again: no answer (fetch's TypeError), or a gateway's 502 or 504. */
function lostPoll(err: unknown): boolean {
  if (err instanceof WrsApiError) return err.status === 502 || err.status === 504;
  return err instanceof TypeError;
}

/**
 * `answer`, or for a keyed request (a start) whose connection failed, a WrsConnectionError
 * carrying its key: the request may have been taken. An abort stays the caller's own reason.
 */
async function lostAnswer<T>(answer: Promise<T>, send: Send): Promise<T> {
  try {
    return await answer;
  } catch (err) {
    if (send.idempotencyKey === undefined || send.signal?.aborted) throw err;
    throw new WrsConnectionError(
      `the answer was lost (${err instanceof Error ? err.message : String(err)}); the run may have started: retry with its idempotencyKey`,
      send.idempotencyKey,
      { cause: err },
    );
  }
}

/** `?a=1&b=2` of the defined values, or nothing. */
function queryString(query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams(
    Object.entries(query)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]): [string, string] => [k, String(v)]),
  );
  return params.size ? `?${params}` : '';
}

/** The statuses of the error types a stream's `error` event carries (it has no status of its own). */
const EVENT_ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  not_found_error: 404,
  rate_limit_error: 429,
};

/** The WrsApiError of a stream's `error` event (D6 `key_revoked`, D39 `not_found`), whose envelope it carries. */
function errorOfEvent(event: StreamErrorEvent): WrsApiError {
  const { type, code, message } = event.error;
  return new WrsApiError(
    EVENT_ERROR_STATUS[type] ?? 500,
    type,
    message,
    code,
    undefined,
    undefined,
    {
      body: event,
    },
  );
}

/** Parses an SSE body into events (and 'DONE' for the terminator), skipping comments. */
async function* parseSse(
  response: Response,
): AsyncGenerator<StreamEvent | StreamErrorEvent | 'DONE'> {
  if (!response.body) return;
  // SSE lines end in \r\n, \r or \n (a proxy may rewrite the service's \n); a blank line ends an event.
  let data: string[] = [];
  for await (const line of lines(decodeText(chunksOf(response.body)), /\r\n|\r|\n/g)) {
    if (line === '') {
      const text = data.join('\n');
      data = [];
      if (text !== '')
        yield text === '[DONE]' ? 'DONE' : (JSON.parse(text) as StreamEvent | StreamErrorEvent);
    } else if (line.startsWith('data:')) {
      data.push(line.slice(line.startsWith('data: ') ? 6 : 5)); // the spec strips one space
    } // id:, retry:, event: and comments: the cursor is the event's own sequence_number
  }
}

/** A body's chunks through its reader (browsers' streams need not be async iterable); cancels the body if left early. */
async function* chunksOf(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

/** The text of a UTF-8 byte stream, a piece at a time (a character split between pieces is kept whole). */
async function* decodeText(bytes: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  for await (const chunk of bytes) yield decoder.decode(chunk, { stream: true });
  const rest = decoder.decode();
  if (rest) yield rest;
}

/**
 * The lines of a text, split where `ends` (a global RegExp of line ends) matches, the last one
 * even without an end. Each piece is scanned once and a long line's pieces are joined once, so
 * reading is linear in the body's length: rescanning what was pending made one 24 MiB event
 * take 9.6 s. A `\r\n` split between two pieces counts as one end.
 */
async function* lines(text: AsyncIterable<string>, ends: RegExp): AsyncGenerator<string> {
  let pending: string[] = [];
  let afterCr = false;
  for await (const piece of text) {
    if (piece === '') continue;
    let start: number = afterCr && piece.startsWith('\n') ? 1 : 0;
    afterCr = false;
    ends.lastIndex = start;
    for (let end = ends.exec(piece); end; end = ends.exec(piece)) {
      pending.push(piece.slice(start, end.index));
      yield pending.join('');
      pending = [];
      start = end.index + end[0].length;
      afterCr = end[0] === '\r' && start === piece.length;
    }
    if (start < piece.length) pending.push(piece.slice(start));
  }
  if (pending.length) yield pending.join('');
}
