/**
 * A local fake of Replicate's predictions API (test/ only), real wire format: create with
 * `POST /v1/predictions` ({version|model, input}), poll `GET /v1/predictions/{id}`, cancel with
 * `POST /v1/predictions/{id}/cancel`. The prediction's `input.scenario` scripts it:
 *   - `media` (default): `starting`, then `processing`, and `succeeded` on poll `input.polls`
 *     (default 3) with a video (MP4) and an audio (MP3) URL served by the fake itself;
 *   - `forever`: never ends (for cancellation);
 *   - `fail`: ends `failed` with an error message (`input.error_chars: n`: a message of n characters);
 *   - `abort`: ends `aborted` (its deadline passed before it started), never having been `processing`;
 *   - `tokens`: a list of strings (a language model's streamed tokens);
 *   - `mixed`: a PDF URL, a plain string and an object;
 *   - `urls`: the URLs listed in `input.urls`, as given (a hostile or compromised provider's answer);
 *   - `wide`: an output of `input.values` empty objects (a hostile answer small in bytes, huge parsed);
 *   - `huge`: every poll answers a JSON body of `input.bytes` bytes (`endless` by default), streamed
 *     as the client reads it (a hostile provider's answer); `sentBytes` counts what was written.
 * `input.flaky_poll: n` answers 503 to the n-th poll (once), as an overloaded provider would.
 * The output files are served at /files/* with misleading Content-Types, so typing by the bytes is tested;
 * `GET /files/to?url=<url>` redirects (302) there, as a provider's storage link may.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { streamHugeJson } from './huge-body';
import { mp3, mp4, pdf } from './media';

export interface FakePrediction {
  id: string;
  body: any;
  polls: number;
  status: string;
  cancelled: boolean;
  /** Bytes of `huge` poll answers written so far. */
  sentBytes: number;
}

export interface FakeReplicate {
  baseUrl: string;
  predictions: FakePrediction[];
  /** Every request line, in order (`POST /v1/predictions`, `GET /v1/predictions/p1` ...). */
  log: string[];
  /** Bytes served for the output URLs. */
  files: { video: Buffer; audio: Buffer; pdf: Buffer };
  close(): Promise<void>;
}

/** Starts the fake on a free loopback port. */
export async function startFakeReplicate(): Promise<FakeReplicate> {
  const predictions = new Map<string, FakePrediction>();
  const list: FakePrediction[] = [];
  const log: string[] = [];
  const files = { video: mp4(40_000), audio: mp3(6), pdf: pdf('From a model') };
  let origin = '';
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    log.push(`${req.method} ${req.url}`);
    const send = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    const url = req.url ?? '/';
    if (req.method === 'GET' && url.startsWith('/files/to?')) {
      res.writeHead(302, { location: new URL(url, origin).searchParams.get('url') ?? '/' });
      return res.end();
    }
    if (req.method === 'GET' && url.startsWith('/files/')) {
      const bytes =
        url === '/files/out.mp4'
          ? files.video
          : url === '/files/out.mp3'
            ? files.audio
            : url === '/files/report.pdf'
              ? files.pdf
              : null;
      if (!bytes) return send(404, { detail: 'not found' });
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': bytes.length,
      });
      return res.end(bytes);
    }
    if (req.headers.authorization !== 'Bearer r8_test')
      return send(401, { detail: 'Unauthenticated' });
    if (req.method === 'POST' && url === '/v1/predictions') {
      const body = JSON.parse(text || '{}');
      if (!body.version && !body.model)
        return send(422, { detail: 'version or model is required' });
      const prediction: FakePrediction = {
        id: `p${predictions.size + 1}`,
        body,
        polls: 0,
        status: 'starting',
        cancelled: false,
        sentBytes: 0,
      };
      predictions.set(prediction.id, prediction);
      list.push(prediction);
      return send(201, view(prediction));
    }
    const match = /^\/v1\/predictions\/([^/]+)(\/cancel)?$/.exec(url);
    const prediction = match ? predictions.get(match[1]) : undefined;
    if (!prediction) return send(404, { detail: 'Not found.' });
    if (req.method === 'POST' && match![2]) {
      prediction.cancelled = true;
      if (!['succeeded', 'failed', 'aborted'].includes(prediction.status))
        prediction.status = 'canceled';
      return send(200, view(prediction));
    }
    if (req.method === 'GET' && !match![2]) {
      prediction.polls++;
      if (prediction.polls === Number(prediction.body.input?.flaky_poll))
        return send(503, { detail: 'Service Unavailable' });
      if (prediction.body.input?.scenario === 'huge') {
        const bytes = prediction.body.input?.bytes;
        const before = prediction.sentBytes;
        await streamHugeJson(res, bytes ? Number(bytes) : 'endless', (sent) => {
          prediction.sentBytes = before + sent;
        });
        return;
      }
      advance(prediction);
      return send(200, view(prediction));
    }
    send(405, { detail: 'Method not allowed' });
  });

  function advance(p: FakePrediction): void {
    if (['succeeded', 'failed', 'canceled', 'aborted'].includes(p.status)) return;
    const scenario = p.body.input?.scenario ?? 'media';
    const needed = Number(p.body.input?.polls ?? 3);
    if (scenario === 'abort') {
      if (p.polls >= needed) p.status = 'aborted';
      return;
    }
    if (scenario === 'forever' || p.polls < needed) {
      p.status = 'processing';
      return;
    }
    p.status = scenario === 'fail' ? 'failed' : 'succeeded';
  }

  function view(p: FakePrediction) {
    const scenario = p.body.input?.scenario ?? 'media';
    let output: unknown = null;
    if (p.status === 'succeeded') {
      if (scenario === 'tokens') output = ['Once', ' upon', ' a time'];
      else if (scenario === 'mixed')
        output = [`${origin}/files/report.pdf`, 'a caption', { score: 0.9 }];
      else if (scenario === 'urls') output = p.body.input?.urls ?? [];
      else if (scenario === 'wide')
        output = Array.from({ length: Number(p.body.input?.values) }, () => ({}));
      else output = [`${origin}/files/out.mp4`, `${origin}/files/out.mp3`];
    }
    return {
      id: p.id,
      model: p.body.model ?? 'owner/model',
      version: p.body.version ?? 'v-latest',
      input: p.body.input,
      status: p.status,
      output,
      error:
        p.status === 'failed'
          ? 'CUDA out of memory'.padEnd(Number(p.body.input?.error_chars ?? 0), '!')
          : null,
      logs: '',
      metrics: p.status === 'succeeded' ? { predict_time: 2.5 } : {},
      urls: {
        get: `${origin}/v1/predictions/${p.id}`,
        cancel: `${origin}/v1/predictions/${p.id}/cancel`,
      },
    };
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  origin = `http://127.0.0.1:${port}`;
  return {
    baseUrl: `${origin}/v1`,
    predictions: list,
    log,
    files,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
