/**
 * Media in runs (D19) on the real stack: image generation in both answer shapes, a model
 * prediction that takes several polls and yields video plus audio, binary http_request
 * answers, file id and URL inputs, and the SSRF cases a URL input and a provider's answer must not
 * reach. Every file part must carry a signed link of this service that serves the provider's real
 * bytes.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startService, type TestService } from '../support/service';
import { newAccount } from '../support/accounts';
import { call, waitFor } from '../support/http';
import { publish, waitForRun } from '../support/fixtures';
import { runToEnd, startRun } from '../support/runs';
import { IMAGE_COLOURS } from '../fakes/openai';
import { startFakeReplicate, type FakeReplicate } from '../fakes/replicate';
import { mp4, pdf, png } from '../fakes/media';
import { filesCollection } from '../../store/files';
import { setAccountCap } from '../../store/accounts';
import { MAX_OUTPUT_FILES } from '../../activities/model';
import { expectError } from '../support/api-assert';
import { useService } from '../support/use-service';

const START_FEE_USD = 0.001;
const PRICES = JSON.stringify({
  'img-test': { per_image: 0.04 },
  'owner/video-model': { per_second: 0.002 },
});

interface Target {
  origin: string;
  hits: string[];
  close(): Promise<void>;
}

/** Serves media for URL inputs and http_request nodes, with Content-Types that lie (the bytes decide). */
async function startTarget(host = '127.0.0.1'): Promise<Target> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    hits.push(url.pathname);
    if (url.pathname === '/photo.png') {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(png([1, 2, 3], 2, 2));
    }
    if (url.pathname === '/report') {
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-disposition': 'attachment; filename="quarterly report.pdf"',
      });
      return res.end(pdf('Q3'));
    }
    if (url.pathname === '/clip') {
      res.writeHead(200, { 'content-type': 'application/x-binary' });
      return res.end(mp4(3_000));
    }
    if (url.pathname === '/huge-declared') {
      // Declares 1 GiB, sends a few bytes and holds the rest: only the declared length can decide.
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': String(1024 ** 3),
      });
      return res.write(mp4(100));
    }
    if (url.pathname === '/to') {
      res.writeHead(302, { location: url.searchParams.get('url')! });
      return res.end();
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('no such thing');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://${host}:${port}`,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Stands for the Temporal UI on the same machine: its settings answer carries the codec token. */
async function startSettingsServer(): Promise<Target> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '/');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ Codec: { Endpoint: '/codec', AccessToken: 'codec-token-secret' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Fetches a part's link without any Authorization header and returns its bytes and type. */
async function download(
  svc: TestService,
  part: any,
): Promise<{ bytes: Buffer; type: string | null }> {
  assert.ok(
    part.url.startsWith(`${svc.url}/files/file_`),
    `not a link of this service: ${part.url}`,
  );
  const res = await fetch(part.url);
  assert.equal(res.status, 200, part.url);
  return { bytes: Buffer.from(await res.arrayBuffer()), type: res.headers.get('content-type') };
}

const closeTo = (actual: number, expected: number) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${actual} != ${expected}`);

describe('media in runs (D19)', function () {
  this.timeout(120_000);
  let replicate: FakeReplicate;
  let target: Target;
  before(async () => {
    [replicate, target] = await Promise.all([startFakeReplicate(), startTarget()]);
  });
  after(async () => Promise.all([replicate?.close(), target?.close()]));
  const ctx = useService({
    fakeOpenAI: true,
    credit: 100,
    env: () => ({
      PROVIDERS: JSON.stringify({
        replicate: { kind: 'replicate', base_url: replicate.baseUrl, api_key: 'r8_test' },
      }),
      PRICES,
      MODEL_POLL_MS: '100',
      // The fakes listen on http://127.0.0.1: this service may reach them (D19 "where configuration allows").
      ALLOW_HTTP_URLS: 'true',
      ALLOW_PRIVATE_NETWORK: 'true',
    }),
  });

  describe('image_generation', () => {
    const doc = (slug: string, prompt: string) => ({
      slug,
      nodes: [
        { id: 'subject', type: 'user_input', label: 'Subject', input_type: 'text' },
        { id: 'draw', type: 'image_generation', model: 'img-test', prompt, size: '256x256', n: 3 },
        { id: 'out', type: 'user_result', label: 'Images' },
      ],
      edges: [
        { from: 'subject', to: 'draw', port: 'subject' },
        { from: 'draw', to: 'out' },
      ],
    });

    for (const [shape, prompt] of [
      ['b64_json', 'A {{subject}}'],
      ['url', 'A {{subject}} as:url'],
    ] as const) {
      it(`stores n=3 images answered as ${shape} in one item of image parts, billed per image`, async () => {
        const run = await runToEnd(
          ctx.svc.url,
          ctx.key,
          doc(`draw-${shape.replace('_', '-')}`, prompt),
          { subject: 'red fox' },
        );
        assert.equal(run.status, 'completed', JSON.stringify(run));
        const items = run.output.images;
        assert.equal(items.length, 1);
        assert.equal(items[0].status, 'completed');
        assert.equal(items[0].parts.length, 3);
        const request = ctx.fake.requests
          .filter((r) => r.path === '/v1/images/generations')
          .at(-1)!;
        assert.deepEqual(request.body, {
          model: 'img-test',
          prompt: prompt.replace('{{subject}}', 'red fox'),
          n: 3,
          size: '256x256',
        });
        for (const [i, part] of items[0].parts.entries()) {
          assert.equal(part.type, 'image');
          assert.equal(part.name, shape === 'url' ? `${i}.png` : `image-${i + 1}.png`);
          assert.equal(part.mime_type, 'image/png');
          assert.ok(
            !part.url.includes('/v1/image-files/'),
            'the provider URL must not reach the caller',
          );
          const file = await download(ctx.svc, part);
          assert.equal(file.type, 'image/png');
          assert.deepEqual(file.bytes, png(IMAGE_COLOURS[i]));
        }
        closeTo(run.total_cost, START_FEE_USD + 3 * 0.04);
      });
    }

    it('keeps and bills the n images asked for when the provider answers more', async () => {
      const run = await runToEnd(
        ctx.svc.url,
        ctx.key,
        doc('draw-too-many', 'extra:40 {{subject}}'),
        { subject: 'x' },
      );
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.equal(run.output.images[0].parts.length, 3);
      closeTo(run.total_cost, START_FEE_USD + 3 * 0.04);
      const stored = await filesCollection(ctx.svc.store.db).countDocuments({
        'metadata.run_id': run.id,
      });
      assert.equal(stored, 3, 'the 40 more were never stored');
    });

    it('fails the item, unbilled, for an entry that is no image or bytes that are not one', async () => {
      for (const [slug, directive, message] of [
        ['draw-null', 'images:null', 'openai answered image 1 without b64_json or url'],
        [
          'draw-not-png',
          'images:not-png',
          'openai answered image 1 with bytes that are not an image (text/plain)',
        ],
      ]) {
        const run = await runToEnd(ctx.svc.url, ctx.key, doc(slug, `${directive} {{subject}}`), {
          subject: 'x',
        });
        assert.equal(run.status, 'completed', JSON.stringify(run.error));
        assert.deepEqual(run.output.images[0].error, { message, type: 'provider_error' });
        assert.equal(ctx.fake.requestsWith(directive).length, 1, 'not retried');
        closeTo(run.total_cost, START_FEE_USD);
      }
    });

    it('fails the item with the provider’s message on a 4xx', async () => {
      const run = await runToEnd(
        ctx.svc.url,
        ctx.key,
        doc('draw-refused', 'status:400 {{subject}}'),
        { subject: 'x' },
      );
      assert.equal(run.status, 'completed');
      assert.equal(run.output.images[0].status, 'failed');
      assert.equal(run.output.images[0].error.code, 400);
      assert.match(run.output.images[0].error.message, /The model refused/);
    });
  });

  describe('model (Replicate-style predictions)', () => {
    const doc = (
      slug: string,
      input: Record<string, unknown>,
      target: Record<string, string> = { model: 'owner/video-model' },
    ) => ({
      slug,
      nodes: [
        { id: 'idea', type: 'user_input', label: 'Idea', input_type: 'text' },
        { id: 'predict', type: 'model', provider: 'replicate', ...target, input },
        { id: 'out', type: 'user_result', label: 'Media' },
      ],
      edges: [
        { from: 'idea', to: 'predict', port: 'idea' },
        { from: 'predict', to: 'out' },
      ],
    });

    it('creates one prediction, polls it several times, stores the video and audio outputs typed by their bytes and bills predict_time', async () => {
      const run = await runToEnd(
        ctx.svc.url,
        ctx.key,
        doc('video-audio', {
          prompt: 'a clip of {{idea}}',
          settings: { seconds: 4, tags: ['{{idea}}'] },
          polls: 4,
        }),
        { idea: 'waves' },
      );
      assert.equal(run.status, 'completed', JSON.stringify(run));
      const prediction = replicate.predictions.at(-1)!;
      assert.deepEqual(prediction.body, {
        model: 'owner/video-model',
        input: { prompt: 'a clip of waves', settings: { seconds: 4, tags: ['waves'] }, polls: 4 },
      });
      assert.ok(prediction.polls >= 4, `polled ${prediction.polls} times`);
      assert.equal(
        replicate.log.filter((l) => l === 'POST /v1/predictions').length,
        replicate.predictions.length,
        'one create per prediction',
      );

      const [item] = run.output.media;
      assert.equal(item.status, 'completed');
      assert.deepEqual(
        item.parts.map((p: any) => [p.type, p.mime_type, p.name]),
        [
          ['video', 'video/mp4', 'out.mp4'],
          ['file', 'audio/mpeg', 'out.mp3'],
        ],
      );
      const video = await download(ctx.svc, item.parts[0]);
      assert.equal(video.type, 'video/mp4');
      assert.deepEqual(video.bytes, replicate.files.video);
      const audio = await download(ctx.svc, item.parts[1]);
      assert.equal(audio.type, 'audio/mpeg');
      assert.deepEqual(audio.bytes, replicate.files.audio);
      for (const part of item.parts)
        assert.ok(
          !part.url.includes(new URL(replicate.baseUrl).host),
          'no provider URL reaches the caller',
        );
      closeTo(run.total_cost, START_FEE_USD + 2.5 * 0.002);

      // The stored outputs belong to the run's account and name the run.
      const stored = await filesCollection(ctx.svc.store.db).findOne({
        _id: new URL(item.parts[0].url).pathname.split('/')[2],
      });
      assert.equal(stored?.metadata.source, 'output');
      assert.equal(stored?.metadata.run_id, run.id);
    });

    it('types mixed outputs: a PDF URL is a file, a string is text, an object is json; a version pins the model', async () => {
      const run = await runToEnd(
        ctx.svc.url,
        ctx.key,
        doc(
          'mixed-output',
          { scenario: 'mixed', polls: 1, about: '{{idea}}' },
          { version: 'abc123' },
        ),
        { idea: 'q3' },
      );
      const [item] = run.output.media;
      assert.equal(replicate.predictions.at(-1)!.body.version, 'abc123');
      assert.deepEqual(
        item.parts.map((p: any) => p.type),
        ['file', 'text', 'json'],
      );
      assert.equal(item.parts[0].mime_type, 'application/pdf');
      assert.deepEqual((await download(ctx.svc, item.parts[0])).bytes, replicate.files.pdf);
      assert.equal(item.parts[1].text, 'a caption');
      assert.deepEqual(item.parts[2].data, { score: 0.9 });

      const tokens = await runToEnd(
        ctx.svc.url,
        ctx.key,
        doc('tokens-output', { scenario: 'tokens', polls: 1, q: '{{idea}}' }),
        { idea: 'story' },
      );
      assert.deepEqual(tokens.output.media[0].parts, [{ type: 'text', text: 'Once upon a time' }]);
    });

    it('a retried attempt resumes its prediction instead of creating (and paying for) another', async () => {
      const run = await runToEnd(
        ctx.svc.url,
        ctx.key,
        doc('prediction-resumed', { polls: 5, flaky_poll: 3, q: '{{idea}}' }),
        { idea: 'resume-me' },
      );
      assert.equal(run.status, 'completed', JSON.stringify(run));
      const created = replicate.predictions.filter((p) => p.body.input?.q === 'resume-me');
      assert.equal(created.length, 1, 'one prediction for two attempts');
      assert.ok(created[0].polls >= 5);
      assert.equal(run.output.media[0].parts.length, 2);
    });

    it('fails the item when the prediction fails', async () => {
      const run = await runToEnd(
        ctx.svc.url,
        ctx.key,
        doc('prediction-fails', { scenario: 'fail', polls: 1, q: '{{idea}}' }),
        { idea: 'x' },
      );
      assert.equal(run.status, 'completed');
      assert.equal(run.output.media[0].status, 'failed');
      assert.match(run.output.media[0].error.message, /the prediction failed: CUDA out of memory/);
    });

    it('fails the item at once when the prediction is aborted (its deadline passed before it started) and bills nothing', async () => {
      const run = await runToEnd(
        ctx.svc.url,
        ctx.key,
        doc('prediction-aborted', { scenario: 'abort', polls: 2, q: '{{idea}}' }),
        { idea: 'late' },
      );
      assert.equal(run.status, 'completed', JSON.stringify(run));
      const [item] = run.output.media;
      assert.equal(item.status, 'failed');
      assert.equal(
        item.error.message,
        'replicate: the prediction was aborted: its deadline passed before it started',
      );
      const prediction = replicate.predictions.find((p) => p.body.input?.q === 'late')!;
      assert.equal(prediction.polls, 2, 'polling stopped at the aborted status');
      closeTo(run.total_cost, START_FEE_USD);
    });

    it('fails the item of an answer of more than 250,000 JSON values before parsing it, and of 200,000 values by its size: the run completes', async () => {
      const wide = doc('prediction-wide', { scenario: 'wide', values: '{{idea}}', polls: 1 });
      const errorFor = async (values: number) => {
        const run = await runToEnd(ctx.svc.url, ctx.key, wide, { idea: String(values) });
        assert.equal(run.status, 'completed', JSON.stringify(run.error));
        return run.output.media[0].error.message;
      };
      assert.equal(await errorFor(300_000), 'replicate: answer holds more than 250000 values');
      // 200,000 parts spread as arguments overflowed the stack: retried, then the run failed.
      assert.match(
        await errorFor(200_000),
        /^the answer is over the 1048576 byte limit of one item/,
      );
    });

    it('keeps 500 characters of a prediction’s error: the provider’s words become an item’s error', async () => {
      const run = await runToEnd(
        ctx.svc.url,
        ctx.key,
        doc('prediction-fails-long', {
          scenario: 'fail',
          polls: 1,
          error_chars: 1_000_000,
          q: '{{idea}}',
        }),
        { idea: 'x' },
      );
      assert.equal(
        run.output.media[0].error.message,
        `replicate: the prediction failed: ${'CUDA out of memory'.padEnd(500, '!')}`,
      );
    });

    it('a run cancel stops the polling and cancels the prediction at the provider', async () => {
      await publish(
        ctx.svc.url,
        ctx.key,
        doc('prediction-forever', { scenario: 'forever', q: '{{idea}}' }),
      );
      const runId = await startRun(ctx.svc.url, ctx.key, 'prediction-forever', { idea: 'endless' });
      const prediction = await waitFor(
        async () => {
          const p = replicate.predictions.find((x) => x.body.input?.q === 'endless');
          return p && p.polls >= 2 ? p : undefined;
        },
        { what: 'the prediction to be polled' },
      );
      assert.equal(
        (await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, { key: ctx.key })).status,
        202,
      );
      const run = await waitForRun(ctx.svc.url, ctx.key, runId);
      assert.equal(run.status, 'cancelled');
      await waitFor(async () => (prediction.cancelled ? true : undefined), {
        what: 'the provider to see the cancel',
      });
      assert.equal(prediction.status, 'canceled');
      const polls = prediction.polls;
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(prediction.polls, polls, 'no polling after the cancel');
    });
  });

  describe('http_request binary answers', () => {
    it('stores a binary answer as a file part typed by its bytes, named by Content-Disposition or the URL', async () => {
      const doc = {
        slug: 'fetch-binary',
        nodes: [
          { id: 'paths', type: 'batch', rows: ['report', 'clip'] },
          { id: 'get', type: 'http_request', url: `${target.origin}/{{path}}` },
          { id: 'out', type: 'user_result', label: 'Files' },
        ],
        edges: [
          { from: 'paths', to: 'get', port: 'path' },
          { from: 'get', to: 'out' },
        ],
      };
      const run = await runToEnd(ctx.svc.url, ctx.key, doc);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      const parts = run.output.files.map((item: any) => item.parts[0]);
      assert.deepEqual(
        parts.map((p: any) => [p.type, p.mime_type, p.name]),
        [
          ['file', 'application/pdf', 'quarterly report.pdf'],
          ['video', 'video/mp4', 'clip.mp4'],
        ],
      );
      assert.deepEqual((await download(ctx.svc, parts[0])).bytes, pdf('Q3'));
      assert.deepEqual((await download(ctx.svc, parts[1])).bytes, mp4(3_000));
    });

    it('refuses a binary answer whose declared length passes the file limit before reading it', async () => {
      const doc = {
        slug: 'fetch-huge-declared',
        nodes: [
          { id: 'get', type: 'http_request', url: `${target.origin}/huge-declared` },
          { id: 'out', type: 'user_result', label: 'File' },
        ],
        edges: [{ from: 'get', to: 'out' }],
      };
      const run = await runToEnd(ctx.svc.url, ctx.key, doc);
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.deepEqual(run.output.file[0].error, {
        message: `the answer is larger than the ${256 * 1024 * 1024} byte file limit`,
        type: 'provider_error',
      });
      assert.equal(
        target.hits.filter((path) => path === '/huge-declared').length,
        1,
        'not retried',
      );
    });
  });

  it('keeps the files of unpaid work within the account’s storage quota: http_request answers, URL inputs, then uploads (D19)', async () => {
    const { accountId, key } = await ctx.newAccount(100);
    const clip = mp4(3_000).length;
    await setAccountCap(ctx.svc.store.collections, accountId, 'max_file_storage_bytes', 2.5 * clip);
    // One row at a time, so the count is exact: two clips fit, the next two find no room.
    const fetchMany = {
      slug: 'fetch-many',
      concurrency: 1,
      nodes: [
        { id: 'paths', type: 'batch', rows: ['clip', 'clip', 'clip', 'clip'] },
        { id: 'get', type: 'http_request', url: `${target.origin}/{{path}}` },
        { id: 'out', type: 'user_result', label: 'Files' },
      ],
      edges: [
        { from: 'paths', to: 'get', port: 'path' },
        { from: 'get', to: 'out' },
      ],
    };
    const fetched = await runToEnd(ctx.svc.url, key, fetchMany);
    const items = fetched.output?.files ?? [];
    assert.deepEqual(
      items.map((item: any) => item.status),
      ['completed', 'completed', 'failed', 'failed'],
      JSON.stringify(fetched).slice(0, 500),
    );
    assert.equal(items[2].error.type, 'storage_quota_exceeded');
    assert.match(items[2].error.message, /storage quota/);
    const stored = await filesCollection(ctx.svc.store.db)
      .find({ 'metadata.account_id': accountId })
      .toArray();
    assert.equal(stored.length, 2, 'nothing of a refused answer is kept');
    // A URL input's copy is refused the same way, failing its run before anything else runs.
    const copy = {
      slug: 'quota-copy',
      nodes: [
        { id: 'doc', type: 'user_input', label: 'Document', input_type: 'file' },
        { id: 'out', type: 'user_result', label: 'Copy' },
      ],
      edges: [{ from: 'doc', to: 'out' }],
    };
    const copied = await runToEnd(ctx.svc.url, key, copy, { document: `${target.origin}/clip` });
    assert.equal(copied.status, 'failed');
    assert.match(copied.error, /input 'document'.*storage quota/);
    // The runs' files count for uploads as well.
    const upload = await call(ctx.svc.url, 'POST', '/api/v1/files?name=more.txt', {
      key,
      body: 'x'.repeat(clip),
      headers: { 'content-type': 'text/plain' },
    });
    expectError(upload, {
      status: 413,
      type: 'invalid_request_error',
      code: 'storage_quota_exceeded',
    });
  });

  describe('file inputs', () => {
    const doc = {
      slug: 'echo-photo',
      nodes: [
        { id: 'photo', type: 'user_input', label: 'Photo', input_type: 'image' },
        { id: 'doc', type: 'user_input', label: 'Document', input_type: 'file', required: false },
        { id: 'caption', type: 'text', template: 'photo at {{photo}}' },
        { id: 'out', type: 'user_result', label: 'Photo Out' },
        { id: 'doc_out', type: 'user_result', label: 'Doc Out' },
        { id: 'caption_out', type: 'user_result', label: 'Caption' },
      ],
      edges: [
        { from: 'photo', to: 'out' },
        { from: 'doc', to: 'doc_out' },
        { from: 'photo', to: 'caption', port: 'photo' },
        { from: 'caption', to: 'caption_out' },
      ],
    };
    before(async () => publish(ctx.svc.url, ctx.key, doc));

    it('turns the caller’s file id into an image part with a signed link, name and type', async () => {
      const bytes = png([50, 60, 70], 3, 3);
      const up = await fetch(`${ctx.svc.url}/api/v1/files?name=me.png`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.key}` },
        body: bytes,
      });
      const file = (await up.json()) as any;
      const run = await waitForRun(
        ctx.svc.url,
        ctx.key,
        await startRun(ctx.svc.url, ctx.key, doc.slug, { photo: file.id }),
      );
      assert.equal(run.status, 'completed', JSON.stringify(run));
      const part = run.output.photo_out[0].parts[0];
      assert.equal(part.type, 'image');
      assert.equal(part.name, 'me.png');
      assert.equal(part.mime_type, 'image/png');
      assert.ok(part.url.includes(`/files/${file.id}/content?`), part.url);
      assert.deepEqual((await download(ctx.svc, part)).bytes, bytes);
      assert.equal(run.output.caption[0].parts[0].text, `photo at ${part.url}`); // templates see the link
    });

    it('fetches a URL input (following a redirect), stores it under the run’s account and links to the copy', async () => {
      const url = `${target.origin}/to?url=${encodeURIComponent(`${target.origin}/photo.png`)}`;
      const run = await waitForRun(
        ctx.svc.url,
        ctx.key,
        await startRun(ctx.svc.url, ctx.key, doc.slug, {
          photo: url,
          document: `${target.origin}/report`,
        }),
      );
      assert.equal(run.status, 'completed', JSON.stringify(run));
      const photo = run.output.photo_out[0].parts[0];
      assert.deepEqual(
        [photo.type, photo.mime_type, photo.name],
        ['image', 'image/png', 'photo.png'],
      );
      assert.deepEqual((await download(ctx.svc, photo)).bytes, png([1, 2, 3], 2, 2));
      const document = run.output.doc_out[0].parts[0];
      assert.deepEqual(
        [document.type, document.mime_type, document.name],
        ['file', 'application/pdf', 'quarterly report.pdf'],
      );
      const stored = await filesCollection(ctx.svc.store.db).findOne({
        _id: new URL(photo.url).pathname.split('/')[2],
      });
      assert.equal(stored?.metadata.source, 'input');
      assert.equal(stored?.metadata.run_id, run.id);
    });

    it('fails the run, naming the input, when the URL answers 404', async () => {
      const run = await waitForRun(
        ctx.svc.url,
        ctx.key,
        await startRun(ctx.svc.url, ctx.key, doc.slug, { photo: `${target.origin}/gone.png` }),
      );
      assert.equal(run.status, 'failed');
      assert.match(
        run.error,
        /node 'photo' \(user_input\): input 'photo': http:\/\/127\.0\.0\.1:\d+ answered 404/,
      );
    });
  });

  describe('SSRF: URL inputs on a service that does not allow private addresses', () => {
    let guarded: TestService;
    let guardedKey: string;
    let inner: Target;
    const doc = {
      slug: 'fetch-photo',
      nodes: [
        { id: 'photo', type: 'user_input', label: 'Photo', input_type: 'image' },
        { id: 'out', type: 'user_result', label: 'Photo Out' },
      ],
      edges: [{ from: 'photo', to: 'out' }],
    };
    before(async () => {
      inner = await startTarget('127.0.0.2'); // a host this service is told to trust, which redirects to loopback
      guarded = await startService({
        env: { ALLOW_HTTP_URLS: 'true', ALLOW_PRIVATE_HOSTS: '127.0.0.2', RETRY_INITIAL_MS: '50' },
      });
      ({ key: guardedKey } = await newAccount(guarded.store.collections));
      await publish(guarded.url, guardedKey, doc);
    });
    after(async () => {
      await guarded?.close();
      await inner?.close();
    });

    const refused = async (url: string, why: RegExp) => {
      const before = target.hits.length;
      const run = await waitForRun(
        guarded.url,
        guardedKey,
        await startRun(guarded.url, guardedKey, doc.slug, { photo: url }),
      );
      assert.equal(run.status, 'failed', JSON.stringify(run));
      assert.match(run.error, /^node 'photo' \(user_input\): input 'photo': /);
      assert.match(run.error, why);
      assert.equal(target.hits.length, before, 'the refused address was never contacted');
      assert.equal(run.output, null);
    };

    it('refuses loopback (by address and by name)', async () => {
      await refused(`${target.origin}/photo.png`, /127\.0\.0\.1, a loopback address/);
      await refused(
        `http://localhost:${new URL(target.origin).port}/photo.png`,
        /localhost resolves to 127\.0\.0\.1, a loopback address/,
      );
    });

    it('refuses a private 10.x address', async () => {
      await refused('http://10.1.2.3/photo.png', /10\.1\.2\.3, a private network address/);
    });

    it('refuses the cloud metadata address', async () => {
      await refused(
        'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
        /169\.254\.169\.254, a cloud metadata address/,
      );
    });

    it('refuses a redirect to loopback, checked after the redirect', async () => {
      const innerBefore = inner.hits.length;
      await refused(
        `${inner.origin}/to?url=${encodeURIComponent(`${target.origin}/photo.png`)}`,
        /127\.0\.0\.1, a loopback address/,
      );
      assert.deepEqual(
        inner.hits.slice(innerBefore),
        ['/to'],
        'the first, allowed hop was fetched',
      );
    });
  });

  describe('SSRF: URLs in provider answers, on a service with the production default', () => {
    // ALLOW_PRIVATE_NETWORK unset: the fakes are reachable only as configured providers (their exact
    // origin), and the URLs their answers carry are as untrusted as a caller's.
    let ui: Target;
    before(async () => {
      ui = await startSettingsServer(); // on 127.0.0.1 too, as the fake providers are
    });
    after(async () => ui?.close());
    const guarded = useService({
      fakeOpenAI: true,
      credit: 100,
      env: () => ({
        PROVIDERS: JSON.stringify({
          replicate: { kind: 'replicate', base_url: replicate.baseUrl, api_key: 'r8_test' },
        }),
        PRICES,
        MODEL_POLL_MS: '100',
        // On the old code the metadata address was dialled: bound that wait so the test fails quickly there.
        FILE_FETCH_TIMEOUT_MS: '3000',
        NODE_MAX_ATTEMPTS: '2',
        RETRY_INITIAL_MS: '50',
      }),
    });
    const settings = () => `${ui.origin}/api/v1/settings`;
    const modelDoc = (slug: string, urls: string[]) => ({
      slug,
      nodes: [
        { id: 'urls', type: 'batch', rows: urls },
        {
          id: 'predict',
          type: 'model',
          provider: 'replicate',
          model: 'owner/video-model',
          input: { scenario: 'urls', polls: 1, urls: ['{{u}}'] },
        },
        { id: 'out', type: 'user_result', label: 'Media' },
      ],
      edges: [
        { from: 'urls', to: 'predict', port: 'u' },
        { from: 'predict', to: 'out' },
      ],
    });
    /** Asserts each item failed for good, as a provider_error without an HTTP status, with a message matching its pattern. */
    const refusedItems = (run: any, label: string, patterns: RegExp[]) => {
      assert.equal(run.status, 'completed', JSON.stringify(run));
      const items = run.output[label];
      assert.equal(items.length, patterns.length, JSON.stringify(items));
      for (const [i, why] of patterns.entries()) {
        assert.equal(items[i].status, 'failed', JSON.stringify(items[i]));
        assert.equal(items[i].error.type, 'provider_error');
        assert.equal(items[i].error.code, undefined, 'a refusal is not an HTTP status');
        assert.match(items[i].error.message, why);
      }
    };

    it(`fails an item whose prediction lists more than MAX_OUTPUT_FILES (${MAX_OUTPUT_FILES}) files, fetching none of them`, async () => {
      const own = `${new URL(replicate.baseUrl).origin}/files/out.mp3`;
      const doc = modelDoc('many-files', [own]);
      (doc.nodes[1] as any).input.urls = Array(MAX_OUTPUT_FILES + 1).fill('{{u}}');
      const fetched = () => replicate.log.filter((line) => line.startsWith('GET /files/')).length;
      const before = fetched();
      const run = await runToEnd(guarded.svc.url, guarded.key, doc);
      refusedItems(run, 'media', [
        new RegExp(
          `^replicate: the prediction's output lists ${MAX_OUTPUT_FILES + 1} files, more than the ${MAX_OUTPUT_FILES} one item holds$`,
        ),
      ]);
      assert.equal(fetched(), before, 'no output was fetched');
      (doc.nodes[1] as any).input.urls = Array(MAX_OUTPUT_FILES).fill('{{u}}');
      const within = await runToEnd(guarded.svc.url, guarded.key, { ...doc, slug: 'files-within' });
      assert.equal(
        within.output.media[0].parts.length,
        MAX_OUTPUT_FILES,
        JSON.stringify(within.error),
      );
    });

    it('fails an item whose output is a malformed data: URL, billing the prediction’s time (a URIError failed the run, unbilled)', async () => {
      const run = await runToEnd(
        guarded.svc.url,
        guarded.key,
        modelDoc('malformed-data-url', ['data:text/plain,100%']),
      );
      refusedItems(run, 'media', [/^replicate: an output data: URL is not percent-encoded text$/]);
      closeTo(run.total_cost, START_FEE_USD + 2.5 * 0.002);
    });

    it('still stores outputs served from the provider’s own configured origin (allowed exactly)', async () => {
      const run = await runToEnd(
        guarded.svc.url,
        guarded.key,
        modelDoc('provider-own-origin', [`${new URL(replicate.baseUrl).origin}/files/out.mp4`]),
      );
      assert.equal(run.status, 'completed', JSON.stringify(run));
      const part = run.output.media[0].parts[0];
      assert.equal(part.mime_type, 'video/mp4');
      assert.deepEqual((await download(guarded.svc, part)).bytes, replicate.files.video);
    });

    it('model: refuses an output URL on another loopback port and on the metadata address, naming it; nothing is fetched', async () => {
      const hits = ui.hits.length;
      const run = await runToEnd(
        guarded.svc.url,
        guarded.key,
        modelDoc('provider-answer-ssrf', [
          settings(),
          'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
        ]),
      );
      refusedItems(run, 'media', [
        /^replicate: output URL refused: http:\/\/127\.0\.0\.1:\d+ is refused: 127\.0\.0\.1, a loopback address$/,
        /^replicate: output URL refused: http:\/\/169\.254\.169\.254 is refused: 169\.254\.169\.254, a cloud metadata address$/,
      ]);
      assert.equal(ui.hits.length, hits, 'the local service never saw a request');
    });

    it('image_generation: refuses an image URL on loopback outside the provider’s origin; nothing is fetched', async () => {
      const hits = ui.hits.length;
      const doc = {
        slug: 'image-answer-ssrf',
        nodes: [
          { id: 'draw', type: 'image_generation', model: 'img-test', prompt: `url:${settings()}` },
          { id: 'out', type: 'user_result', label: 'Images' },
        ],
        edges: [{ from: 'draw', to: 'out' }],
      };
      const run = await runToEnd(guarded.svc.url, guarded.key, doc);
      refusedItems(run, 'images', [
        /^openai: output URL refused: http:\/\/127\.0\.0\.1:\d+ is refused: 127\.0\.0\.1, a loopback address$/,
      ]);
      assert.equal(ui.hits.length, hits, 'the local service never saw a request');
    });

    it('llm: a redirect of the provider’s own API to loopback is refused before it is followed', async () => {
      const hits = ui.hits.length;
      const doc = {
        slug: 'provider-api-redirect',
        nodes: [
          { id: 'ask', type: 'llm', model: 'gpt-test', prompt: `redirect:${settings()}` },
          { id: 'out', type: 'user_result', label: 'Answer' },
        ],
        edges: [{ from: 'ask', to: 'out' }],
      };
      const run = await runToEnd(guarded.svc.url, guarded.key, doc);
      refusedItems(run, 'answer', [
        /^openai: http:\/\/127\.0\.0\.1:\d+ is refused: 127\.0\.0\.1, a loopback address$/,
      ]);
      assert.equal(ui.hits.length, hits, 'the redirect target never saw a request');
    });

    it('checks every redirect: an output URL on the provider’s origin that redirects to loopback is refused', async () => {
      const hits = ui.hits.length;
      const hop = `${new URL(replicate.baseUrl).origin}/files/to?url=${encodeURIComponent(settings())}`;
      const run = await runToEnd(
        guarded.svc.url,
        guarded.key,
        modelDoc('provider-redirect-ssrf', [hop]),
      );
      refusedItems(run, 'media', [/127\.0\.0\.1, a loopback address$/]);
      assert.ok(
        replicate.log.some((line) => line.startsWith('GET /files/to?')),
        'the first, allowed hop was fetched',
      );
      assert.equal(ui.hits.length, hits, 'the redirect target never saw a request');
    });
  });
});
