/**
 * A local fake of the OpenAI chat completions API (test/ only): real wire format, scripted by
 * the prompt text so each test says what the "model" does:
 *   - `status:NNN` in the prompt answers that HTTP status with an OpenAI-style error body;
 *   - `flaky:<tag>:<n>` answers 503 to the first n requests carrying that tag, then succeeds;
 *   - `throttle:<tag>:<n>:<s>` answers 429 with `Retry-After: <s>` (seconds) to the first n
 *     requests carrying that tag, then succeeds (a provider's rate limit);
 *   - `refuseonce:<tag>` answers 400 (a refusal: the item fails) to the first request carrying
 *     that tag, then succeeds (a row that fails in a run and completes in its re-run, D38);
 *   - `refusetimes:<tag>:<n>` the same for the first n requests (a row that fails in a run and
 *     in its re-run too, then completes in the re-run of the re-run);
 *   - `slow:<ms>` delays the answer (a client that gives up meanwhile is recorded as `aborted`);
 *   - `hold:<tag>` answers only once the test calls `release(tag)` (a call the test ends itself);
 *   - `redirect:<url>` answers 307 to that URL (a hostile or compromised provider);
 *   - `huge:<bytes>` (or `huge:endless`) answers 200 with a JSON body that large, or endless,
 *     streamed as the client reads it (a hostile provider's answer; also for images);
 *   - `pad:<n>` pads a text answer with `x` to n characters (answers of a real size);
 *   - `answer:refused` answers a refusal (`content` null, `refusal` set), `answer:no-choices` an
 *     answer without `choices` (both a 200 with usage), `answer:null` a 200 whose JSON is `null`;
 *   - `tokens:<json>` reports `{"prompt_tokens": <json>, "completion_tokens": <json>}` as the
 *     usage, the JSON as written up to the next space (a hostile provider's counts: -1e9, "many");
 *     otherwise 100 prompt and 50 completion tokens;
 *   - otherwise `echo: <prompt>` for text, `{"echo": <prompt>}` for json, and for a structured
 *     list `{"items": [...]}` with the comma-separated words after `list:` in the prompt.
 * Images (`POST /v1/images/generations`): `n` real PNGs (`extra:<k>`: k more, a provider that
 * answers more than it was asked for; `images:null` a `null` entry, `images:not-png` bytes that
 * are no image), one colour each (IMAGE_COLOURS), as
 * `b64_json`, or as `url`s served by the fake at /v1/image-files/* when the prompt says `as:url`;
 * `url:<url>` in the prompt answers every image as that URL, as given (a hostile provider's answer).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { streamHugeJson } from './huge-body';
import { png } from './media';

/** The usage an answer reports (see `tokens:` above). */
function usageFor(prompt: string): Record<string, unknown> {
  const reported = /tokens:(\S+)/.exec(prompt)?.[1];
  if (reported === undefined)
    return { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 };
  const value: unknown = JSON.parse(reported);
  return { prompt_tokens: value, completion_tokens: value };
}

/** The colour of the i-th generated image. */
export const IMAGE_COLOURS: Array<[number, number, number]> = [
  [255, 0, 0],
  [0, 255, 0],
  [0, 0, 255],
  [255, 255, 0],
  [0, 255, 255],
];

export interface RecordedRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  /** Every message's content joined by newlines: what the directives above are read from. */
  prompt: string;
  /** Set when the client went away before the answer was sent (a cancelled call). */
  aborted: boolean;
  /** Set once the answer was handed to the connection: a request neither answered nor aborted is in flight. */
  answered: boolean;
  /** Bytes of a `huge:` answer written so far. */
  sentBytes: number;
  /** performance.now() when the request arrived, and when it was answered or abandoned (concurrency seen by the provider). */
  startedAt: number;
  endedAt?: number;
  /** The HTTP status the fake answered with (unset: none sent). */
  status?: number;
}

export interface FakeOpenAI {
  baseUrl: string;
  requests: RecordedRequest[];
  /** The recorded requests whose prompt contains `text` (e.g. a flaky tag), in arrival order. */
  requestsWith(text: string): RecordedRequest[];
  /** The most requests whose prompt contains `text` that were ever in flight at once. */
  maxInFlightWith(text: string): number;
  /** Lets the calls held by `hold:<tag>` answer, and any later ones at once. */
  release(tag: string): void;
  close(): Promise<void>;
}

/** Starts the fake on a free loopback port. */
export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const requests: RecordedRequest[] = [];
  const flakyCounts = new Map<string, number>();
  const holds = new Map<string, { released: Promise<void>; release: () => void }>();
  const hold = (tag: string) => {
    let gate = holds.get(tag);
    if (!gate) {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      gate = { released, release };
      holds.set(tag, gate);
    }
    return gate;
  };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    const prompt: string =
      body.messages?.map((m: { content: string }) => m.content).join('\n') ?? body.prompt ?? '';
    const record: RecordedRequest = {
      path: req.url ?? '',
      headers: req.headers,
      body,
      prompt,
      aborted: false,
      answered: false,
      sentBytes: 0,
      startedAt: performance.now(),
    };
    requests.push(record);
    res.on('finish', () => {
      record.answered = true;
      record.endedAt ??= performance.now();
    });
    res.on('close', () => {
      if (!res.writableFinished) record.aborted = true;
      record.endedAt ??= performance.now();
    });
    const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      record.status = status;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(payload));
    };
    const imageFile = /^\/v1\/image-files\/(\d+)\.png$/.exec(req.url ?? '');
    if (req.method === 'GET' && imageFile) {
      res.writeHead(200, { 'content-type': 'image/png' });
      return res.end(png(IMAGE_COLOURS[Number(imageFile[1]) % IMAGE_COLOURS.length]));
    }
    const huge = /huge:(\d+|endless)/.exec(prompt);
    if (req.method === 'POST' && huge) {
      await streamHugeJson(res, huge[1] === 'endless' ? 'endless' : Number(huge[1]), (sent) => {
        record.sentBytes = sent;
      });
      return;
    }
    if (req.method === 'POST' && req.url === '/v1/images/generations') {
      const status = /status:(\d{3})/.exec(prompt);
      if (status)
        return send(Number(status[1]), {
          error: {
            message: `The model refused: status ${status[1]}`,
            type: 'invalid_request_error',
            code: null,
          },
        });
      const origin = `http://${req.headers.host}`;
      const given = /url:(\S+)/.exec(prompt)?.[1];
      if (prompt.includes('images:null'))
        return send(200, { created: Math.floor(Date.now() / 1000), data: [null] });
      if (prompt.includes('images:not-png'))
        return send(200, {
          created: Math.floor(Date.now() / 1000),
          data: [{ b64_json: Buffer.from('these are not pixels').toString('base64') }],
        });
      const extra = Number(/extra:(\d+)/.exec(prompt)?.[1] ?? 0);
      const data = Array.from({ length: (body.n ?? 1) + extra }, (_, i) =>
        given
          ? { url: given }
          : prompt.includes('as:url')
            ? { url: `${origin}/v1/image-files/${i}.png` }
            : {
                b64_json: png(IMAGE_COLOURS[i % IMAGE_COLOURS.length]).toString('base64'),
                revised_prompt: prompt,
              },
      );
      return send(200, { created: Math.floor(Date.now() / 1000), data });
    }
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      return send(404, {
        error: {
          message: `Unknown request URL: ${req.method} ${req.url}`,
          type: 'invalid_request_error',
          code: 'unknown_url',
        },
      });
    }
    const redirect = /redirect:(\S+)/.exec(prompt);
    if (redirect) {
      res.writeHead(307, { location: redirect[1] });
      return res.end();
    }
    const slow = /slow:(\d+)/.exec(prompt);
    if (slow) await new Promise((r) => setTimeout(r, Number(slow[1])));
    const held = /\bhold:([\w-]+)/.exec(prompt);
    if (held) await hold(held[1]).released;
    const status = /status:(\d{3})/.exec(prompt);
    if (status) {
      return send(Number(status[1]), {
        error: {
          message: `The model refused: status ${status[1]}`,
          type: 'invalid_request_error',
          code: null,
        },
      });
    }
    const refuseOnce = /refuseonce:(\w+)/.exec(prompt);
    if (refuseOnce && !flakyCounts.has(`refuse:${refuseOnce[1]}`)) {
      flakyCounts.set(`refuse:${refuseOnce[1]}`, 1);
      return send(400, {
        error: { message: 'The model refused once', type: 'invalid_request_error', code: null },
      });
    }
    const refuseTimes = /refusetimes:(\w+):(\d+)/.exec(prompt);
    if (refuseTimes) {
      const seen = (flakyCounts.get(`refuse:${refuseTimes[1]}`) ?? 0) + 1;
      flakyCounts.set(`refuse:${refuseTimes[1]}`, seen);
      if (seen <= Number(refuseTimes[2]))
        return send(400, {
          error: { message: 'The model refused', type: 'invalid_request_error', code: null },
        });
    }
    const throttle = /throttle:(\w+):(\d+):(\d+)/.exec(prompt);
    if (throttle) {
      const seen = (flakyCounts.get(`throttle:${throttle[1]}`) ?? 0) + 1;
      flakyCounts.set(`throttle:${throttle[1]}`, seen);
      if (seen <= Number(throttle[2]))
        return send(
          429,
          { error: { message: 'Rate limit reached', type: 'rate_limit_error' } },
          { 'retry-after': throttle[3] },
        );
    }
    const flaky = /flaky:(\w+):(\d+)/.exec(prompt);
    if (flaky) {
      const seen = (flakyCounts.get(flaky[1]) ?? 0) + 1;
      flakyCounts.set(flaky[1], seen);
      if (seen <= Number(flaky[2]))
        return send(503, { error: { message: 'The server is overloaded', type: 'server_error' } });
    }
    const user = body.messages?.at(-1)?.content ?? '';
    let content: string;
    const format = body.response_format;
    if (format?.json_schema?.name === 'list') {
      const words = (/list:([^\n]*)/.exec(prompt)?.[1] ?? 'a,b,c')
        .split(',')
        .map((w) => w.trim())
        .filter(Boolean);
      content = JSON.stringify({ items: words });
    } else if (format) {
      content = JSON.stringify({ echo: user });
    } else {
      content = `echo: ${user}`;
      const pad = /pad:(\d+)/.exec(prompt);
      if (pad) content = content.padEnd(Number(pad[1]), 'x');
    }
    const message = prompt.includes('answer:refused')
      ? { role: 'assistant', content: null, refusal: 'I cannot help with that.' }
      : { role: 'assistant', content };
    if (prompt.includes('answer:null')) return send(200, null);
    send(200, {
      id: `chatcmpl-${requests.length}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      ...(prompt.includes('answer:no-choices')
        ? {}
        : { choices: [{ index: 0, message, finish_reason: 'stop' }] }),
      usage: usageFor(prompt),
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    requestsWith: (text) => requests.filter((r) => r.prompt.includes(text)),
    maxInFlightWith: (text) => {
      const edges = requests
        .filter((r) => r.prompt.includes(text))
        .flatMap((r) => [
          [r.startedAt, 1],
          [r.endedAt ?? Infinity, -1],
        ])
        // At equal times an end goes first: a slot handed on is not two calls at once.
        .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      let now = 0;
      let most = 0;
      for (const [, step] of edges) most = Math.max(most, (now += step));
      return most;
    },
    release: (tag) => hold(tag).release(),
    close: () => {
      for (const gate of holds.values()) gate.release(); // a held call would keep the server open
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
