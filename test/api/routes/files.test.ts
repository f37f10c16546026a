/**
 * Files (D19): uploads (raw and multipart, streamed into GridFS), MIME sniffing, the
 * upload limit (D10), signed links (ok, tampered, expired), range requests, file inputs checked
 * at start (a cross-account or unknown file id is a D4 input error), D29 retention, and the
 * storage quota of an account's uploads with the delete that makes room.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import http from 'node:http';
import { ObjectId } from 'mongodb';
import type { TestService } from '../../support/service';
import { call } from '../../support/http';
import { publish } from '../../support/fixtures';
import { assertCors, detailFor, expectError } from '../../support/api-assert';
import { bareMp3, mp3, mp4, pdf, png } from '../../fakes/media';
import { loadConfig } from '../../../config';
import { isId } from '../../../domain/ids';
import { sniffMime } from '../../../lib/files/sniff';
import { sharedDevSecret } from '../../../store/settings';
import { signedUrlAt } from '../../../lib/files/signing';
import { parseRange } from '../../../lib/files/range';
import { deleteFilesOlderThan, filesCollection, storeBytes, storeFile } from '../../../store/files';
import { fileQuota } from '../../../store/storage-quota';
import { setAccountCap } from '../../../store/accounts';
import { connectTestStore } from '../../support/store';
import { useService } from '../../support/use-service';

const LIMIT = 1024 * 1024; // MAX_UPLOAD_BYTES for this file's service
/** The fields of a File object, sorted. */
const FILE_FIELDS = ['created_at', 'id', 'mime_type', 'name', 'size', 'url'];

interface Upload {
  status: number;
  headers: Headers;
  body: any;
}

/** POSTs raw bytes to /api/v1/files. */
async function uploadRaw(
  svc: TestService,
  key: string | undefined,
  bytes: Uint8Array,
  opts: { name?: string; type?: string; encoding?: string } = {},
): Promise<Upload> {
  const query = opts.name !== undefined ? `?name=${encodeURIComponent(opts.name)}` : '';
  const headers: Record<string, string> = {
    'content-type': opts.type ?? 'application/octet-stream',
    ...(opts.encoding ? { 'content-encoding': opts.encoding } : {}),
  };
  if (key) headers.authorization = `Bearer ${key}`;
  const res = await fetch(`${svc.url}/api/v1/files${query}`, {
    method: 'POST',
    headers,
    body: bytes,
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

/** POSTs a multipart form whose file part carries `filename` and a (misleading) part type. */
async function uploadMultipart(
  svc: TestService,
  key: string,
  bytes: Uint8Array,
  filename: string,
  partType = 'image/png',
  fields: Record<string, string> = {},
): Promise<Upload> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([bytes], { type: partType }), filename);
  const res = await fetch(`${svc.url}/api/v1/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

/** Sends a body of `size` bytes in chunks without Content-Length (so only streaming can catch it), over raw HTTP. */
function uploadChunked(
  svc: TestService,
  key: string,
  size: number,
): Promise<{ status: number; body: any }> {
  const url = new URL(`${svc.url}/api/v1/files?name=big.bin`);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/octet-stream',
          'transfer-encoding': 'chunked',
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
          }),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      // The server may close the socket while we still write: the answer came first.
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let sent = 0;
    const pump = () => {
      while (sent < size) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

async function storedCounts(svc: TestService): Promise<{ files: number; chunks: number }> {
  const db = svc.store.db;
  return {
    files: await db.collection('files.files').countDocuments(),
    chunks: await db.collection('files.chunks').countDocuments(),
  };
}

describe('files (D19)', function () {
  this.timeout(60_000);
  const ctx = useService({ worker: false, env: { MAX_UPLOAD_BYTES: String(LIMIT) } });

  describe('sniffing (lib/files/sniff.ts)', () => {
    it('recognises the formats AI workflows exchange from their first bytes', () => {
      const riff = (kind: string) =>
        Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from(kind), Buffer.alloc(8)]);
      const cases: Array<[string, Uint8Array, string]> = [
        ['png', png(), 'image/png'],
        ['jpeg', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46]), 'image/jpeg'],
        ['gif', Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1'), 'image/gif'],
        ['webp', riff('WEBP'), 'image/webp'],
        ['wav', riff('WAVE'), 'audio/wav'],
        ['mp4', mp4(100), 'video/mp4'],
        [
          'mov',
          Buffer.concat([Buffer.from([0, 0, 0, 20]), Buffer.from('ftypqt  '), Buffer.alloc(8)]),
          'video/quicktime',
        ],
        [
          'webm',
          Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x82, 0x84, 0x77, 0x65, 0x62, 0x6d]),
          'video/webm',
        ],
        ['mp3 with ID3', mp3(1), 'audio/mpeg'],
        ['mp3 frame sync', bareMp3(1), 'audio/mpeg'],
        ['ogg', Buffer.from('OggS\x00\x02', 'latin1'), 'audio/ogg'],
        ['pdf', pdf(), 'application/pdf'],
        ['zip', Buffer.from([0x50, 0x4b, 0x03, 0x04, 20, 0]), 'application/zip'],
        ['utf-8 text', Buffer.from('héllo wörld ✓\n'), 'text/plain'],
        ['binary', Buffer.from([0x00, 0x01, 0x02, 0xfe]), 'application/octet-stream'],
        ['invalid utf-8', Buffer.from([0x68, 0x69, 0xc3, 0x28]), 'application/octet-stream'],
      ];
      for (const [what, bytes, mime] of cases) assert.equal(sniffMime(bytes, true), mime, what);
      // A head cut inside a multi-byte character is still text; a whole file ending that way is not.
      const cut = Buffer.from('ab✓').subarray(0, 4);
      assert.equal(sniffMime(cut, false), 'text/plain');
      assert.equal(sniffMime(cut, true), 'application/octet-stream');
    });
  });

  describe('upload', () => {
    it('stores a raw body, sniffs the type (a PNG sent as text/plain is image/png) and answers 201 with a signed link', async () => {
      const bytes = png([10, 20, 30], 4, 3);
      const res = await uploadRaw(ctx.svc, ctx.key, bytes, {
        name: 'pixel.png',
        type: 'text/plain',
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assertCors(res as any);
      assert.deepEqual(Object.keys(res.body).sort(), FILE_FIELDS);
      assert.ok(isId('file', res.body.id), res.body.id);
      assert.equal(res.body.name, 'pixel.png');
      assert.equal(res.body.mime_type, 'image/png');
      assert.equal(res.body.size, bytes.length);
      assert.ok(
        res.body.url.startsWith(`${ctx.svc.url}/files/${res.body.id}/content?expires=`),
        res.body.url,
      );

      const doc = await filesCollection(ctx.svc.store.db).findOne({ _id: res.body.id });
      assert.equal(doc?.metadata.account_id, ctx.accountId);
      assert.equal(doc?.metadata.mime_type, 'image/png');
      assert.ok(doc?.metadata.created_at instanceof Date);

      // The link works without an Authorization header, with the right headers.
      const content = await fetch(res.body.url);
      assert.equal(content.status, 200);
      assert.equal(content.headers.get('content-type'), 'image/png');
      assert.equal(content.headers.get('content-length'), String(bytes.length));
      assert.equal(content.headers.get('accept-ranges'), 'bytes');
      assert.equal(content.headers.get('access-control-allow-origin'), '*');
      assert.equal(content.headers.get('x-content-type-options'), 'nosniff');
      assert.match(content.headers.get('content-disposition') ?? '', /filename="pixel\.png"/);
      assert.deepEqual(Buffer.from(await content.arrayBuffer()), bytes);
    });

    it('stores the file part of a multipart form under its filename, typed by its bytes', async () => {
      const bytes = pdf('multipart');
      const res = await uploadMultipart(ctx.svc, ctx.key, bytes, 'report.pdf', 'image/png', {
        purpose: 'test',
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.name, 'report.pdf');
      assert.equal(res.body.mime_type, 'application/pdf');
      assert.equal(res.body.size, bytes.length);
      const content = await fetch(res.body.url);
      assert.equal(content.headers.get('content-type'), 'application/pdf');
      assert.deepEqual(Buffer.from(await content.arrayBuffer()), bytes);

      // A browser sends the part's name as raw UTF-8.
      const named = await uploadMultipart(ctx.svc, ctx.key, bytes, 'résumé 日本.pdf');
      assert.equal(named.body.name, 'résumé 日本.pdf');
      // A name a saved copy would open as a page is served with the type's extension added.
      const page = await uploadMultipart(ctx.svc, ctx.key, bytes, 'x.html');
      assert.equal(page.body.name, 'x.html');
      assert.match(
        (await fetch(page.body.url)).headers.get('content-disposition') ?? '',
        /^attachment; filename="x\.html\.pdf"/,
      );
    });

    it('sniffs video, audio, text and unknown bytes; names a file without a name after its type', async () => {
      const cases: Array<[Uint8Array, string, string]> = [
        [mp4(2_000), 'video/mp4', 'upload.mp4'],
        [mp3(3), 'audio/mpeg', 'upload.mp3'],
        [bareMp3(3), 'audio/mpeg', 'upload.mp3'],
        [Buffer.from('just some notes\nline two\n'), 'text/plain', 'upload.txt'],
        [Buffer.from([0, 159, 146, 150, 7, 8]), 'application/octet-stream', 'upload.bin'],
      ];
      for (const [bytes, mime, name] of cases) {
        const res = await uploadRaw(ctx.svc, ctx.key, bytes, { type: 'image/jpeg' });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        assert.equal(res.body.mime_type, mime);
        assert.equal(res.body.name, name);
      }
      const text = await uploadRaw(ctx.svc, ctx.key, Buffer.from('plain'), { name: 'notes.txt' });
      assert.equal(
        (await fetch(text.body.url)).headers.get('content-type'),
        'text/plain; charset=utf-8',
      );
    });

    it('refuses an upload over MAX_UPLOAD_BYTES with 413 request_too_large and keeps nothing: declared, streamed and multipart', async () => {
      const before = await storedCounts(ctx.svc);
      const declared = await uploadRaw(ctx.svc, ctx.key, Buffer.alloc(LIMIT + 1, 1), {
        name: 'big.bin',
      });
      expectError(declared as any, {
        status: 413,
        type: 'invalid_request_error',
        code: 'request_too_large',
      });

      // No Content-Length: the limit is found while streaming, after chunks were written to GridFS.
      const streamed = await uploadChunked(ctx.svc, ctx.key, LIMIT + 512 * 1024);
      assert.equal(streamed.status, 413, JSON.stringify(streamed.body));
      assert.equal(streamed.body.error.code, 'request_too_large');

      const multipart = await uploadMultipart(
        ctx.svc,
        ctx.key,
        Buffer.alloc(LIMIT + 100_000, 2),
        'big.bin',
      );
      assert.equal(multipart.status, 413, JSON.stringify(multipart.body));
      assert.equal(multipart.body.error.code, 'request_too_large');

      assert.deepEqual(
        await storedCounts(ctx.svc),
        before,
        'nothing of the refused uploads is left in GridFS',
      );
    });

    it('streams: bytes reach GridFS while the upload still arrives (at most a chunk or two held in memory)', async () => {
      const store = await connectTestStore();
      try {
        const chunks = store.db.collection('files.chunks');
        const CHUNK = 255 * 1024; // GridFS default chunk size
        let sent = 0;
        let lagging = 0;
        async function* source() {
          for (let i = 0; i < 40; i++) {
            // Before handing over more, everything but the last two chunks' worth must be stored already.
            const stored = await chunks.countDocuments();
            if (stored < Math.floor(sent / CHUNK) - 2) lagging++;
            sent += 64 * 1024;
            yield Buffer.alloc(64 * 1024, i);
          }
        }
        const doc = await storeFile(store.db, source(), {
          accountId: 'acct_stream',
          name: 'stream.bin',
          maxBytes: 16 * 1024 * 1024,
          source: 'upload',
        });
        assert.equal(doc.length, 40 * 64 * 1024);
        assert.equal(lagging, 0, 'the source was read ahead of what GridFS had stored');
        assert.equal(await chunks.countDocuments(), Math.ceil(doc.length / CHUNK));
      } finally {
        await store.close();
      }
    });

    it('accepts a file of exactly the limit', async () => {
      const res = await uploadRaw(ctx.svc, ctx.key, Buffer.alloc(LIMIT, 0x62), {
        name: 'exact.txt',
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.size, LIMIT);
    });

    it('refuses an empty upload, a multipart form without a file, and a caller without a key', async () => {
      const before = await storedCounts(ctx.svc);
      expectError((await uploadRaw(ctx.svc, ctx.key, Buffer.alloc(0))) as any, {
        status: 400,
        type: 'invalid_request_error',
        code: 'empty_file',
      });
      const form = new FormData();
      form.append('name', 'x');
      const res = await fetch(`${ctx.svc.url}/api/v1/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.key}` },
        body: form,
      });
      expectError(
        { status: res.status, headers: res.headers, body: await res.json() },
        { status: 400, type: 'invalid_request_error', code: 'invalid_multipart' },
      );
      // A file after more parts than a form may have is not "no file part": the answer says why.
      for (const fields of [39, 40]) {
        const crowded = new FormData();
        for (let i = 0; i < fields; i++) crowded.append(`f${i}`, 'v');
        crowded.append('file', new Blob(['hi']), 'h.txt');
        const answer = await fetch(`${ctx.svc.url}/api/v1/files`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ctx.key}` },
          body: crowded,
        });
        const body = (await answer.json()) as any;
        if (fields === 39) {
          assert.equal(answer.status, 201, JSON.stringify(body));
          await call(ctx.svc.url, 'DELETE', `/api/v1/files/${body.id}`, { key: ctx.key });
        } else
          expectError(
            { status: answer.status, headers: answer.headers, body },
            {
              status: 400,
              type: 'invalid_request_error',
              code: 'invalid_multipart',
              message: ['more than 40 parts before its file part'],
            },
          );
      }
      expectError((await uploadRaw(ctx.svc, undefined, png())) as any, {
        status: 401,
        type: 'authentication_error',
        code: 'invalid_api_key',
      });
      assert.deepEqual(await storedCounts(ctx.svc), before);
    });

    it('refuses a compressed upload (Content-Encoding) with 415 and keeps nothing; identity is no coding', async () => {
      const before = await storedCounts(ctx.svc);
      const rows = gzipSync(Buffer.from('{"a":1}\n{"a":2}\n'));
      const res = await uploadRaw(ctx.svc, ctx.key, rows, { name: 'rows.jsonl', encoding: 'gzip' });
      expectError(res as any, {
        status: 415,
        type: 'invalid_request_error',
        code: 'unsupported_media_type',
      });
      assert.match(res.body.error.message, /^Content-Encoding `gzip` is not supported/);
      assert.deepEqual(await storedCounts(ctx.svc), before);
      const plain = await uploadRaw(ctx.svc, ctx.key, png(), { encoding: 'identity' });
      assert.equal(plain.status, 201, JSON.stringify(plain.body));
    });
  });

  describe('signed links', () => {
    let file: any;
    let secret: string;
    before(async () => {
      file = (await uploadRaw(ctx.svc, ctx.key, png([1, 2, 3]), { name: 'link.png' })).body;
      secret = await sharedDevSecret(ctx.svc.store.db); // no FILE_URL_SECRET here: the development secret in MongoDB
    });

    it('a tampered signature, expiry or file id is 403 invalid_signature', async () => {
      const url = new URL(file.url);
      const sig = url.searchParams.get('sig')!;
      const flipped = new URL(url);
      flipped.searchParams.set('sig', (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1));
      const later = new URL(url);
      later.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
      const other = (await uploadRaw(ctx.svc, ctx.key, png([9, 9, 9]))).body;
      const swapped = new URL(url);
      swapped.pathname = `/files/${other.id}/content`;
      const missing = new URL(url);
      missing.search = '';
      for (const bad of [flipped, later, swapped, missing]) {
        const res = await call(bad.origin, 'GET', bad.pathname + bad.search);
        expectError(res, { status: 403, type: 'invalid_request_error', code: 'invalid_signature' });
      }
      assert.equal((await fetch(file.url)).status, 200, 'the genuine link still works');
    });

    it('an expired link is 403 url_expired; the authenticated file endpoint issues a fresh one', async () => {
      const expired = signedUrlAt(ctx.svc.url, secret, file.id, Math.floor(Date.now() / 1000) - 60);
      const res = await call(ctx.svc.url, 'GET', expired.slice(ctx.svc.url.length));
      expectError(res, { status: 403, type: 'invalid_request_error', code: 'url_expired' });

      const fresh = await call(ctx.svc.url, 'GET', `/api/v1/files/${file.id}`, { key: ctx.key });
      assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
      assert.equal(fresh.body.id, file.id);
      assert.equal((await fetch(fresh.body.url)).status, 200);
      const other = await ctx.newAccount();
      expectError(await call(ctx.svc.url, 'GET', `/api/v1/files/${file.id}`, { key: other.key }), {
        status: 404,
        type: 'not_found_error',
      });
    });

    it('serves single byte ranges of a video (206), the last bytes, and 416 outside the file', async () => {
      const video = mp4(300_000); // larger than one GridFS chunk (255 KiB): ranges cross chunk boundaries
      const up = await uploadRaw(ctx.svc, ctx.key, video, { name: 'clip.mp4' });
      assert.equal(up.body.mime_type, 'video/mp4');
      const size = video.length;
      const get = (range: string) => fetch(up.body.url, { headers: { range } });

      const mid = await get('bytes=261000-261199');
      assert.equal(mid.status, 206);
      assert.equal(mid.headers.get('content-range'), `bytes 261000-261199/${size}`);
      assert.equal(mid.headers.get('content-length'), '200');
      assert.equal(mid.headers.get('content-type'), 'video/mp4');
      assert.deepEqual(Buffer.from(await mid.arrayBuffer()), video.subarray(261000, 261200));

      const tail = await get('bytes=-100');
      assert.equal(tail.status, 206);
      assert.equal(tail.headers.get('content-range'), `bytes ${size - 100}-${size - 1}/${size}`);
      assert.deepEqual(Buffer.from(await tail.arrayBuffer()), video.subarray(size - 100));

      const open = await get('bytes=10-');
      assert.equal(open.status, 206);
      assert.deepEqual(Buffer.from(await open.arrayBuffer()), video.subarray(10));

      const past = await get(`bytes=${size}-`);
      assert.equal(past.status, 416);
      assert.equal(past.headers.get('content-range'), `bytes */${size}`);
      assert.equal(past.headers.get('cache-control'), null);
      assert.equal(((await past.json()) as any).error.code, 'range_not_satisfiable');

      const head = await fetch(up.body.url, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('content-length'), String(size));
      assert.equal(head.headers.get('accept-ranges'), 'bytes');

      // A client holding the bytes revalidates: 304 and no body, before any range.
      const etag = head.headers.get('etag')!;
      for (const headers of <Record<string, string>[]>[
        { 'if-none-match': etag, range: 'bytes=0-9' },
        { 'if-none-match': `"other", W/${etag}` },
        { 'if-modified-since': head.headers.get('last-modified')! },
      ]) {
        // max-age=0 as a browser revalidates: fetch would send `no-cache`, a forced reload (200).
        const cached = await fetch(up.body.url, {
          headers: { ...headers, 'cache-control': 'max-age=0' },
        });
        assert.equal(cached.status, 304, JSON.stringify(headers));
        assert.equal(cached.headers.get('etag'), etag);
        assert.equal((await cached.arrayBuffer()).byteLength, 0);
      }
      const changed = await fetch(up.body.url, { headers: { 'if-none-match': '"other"' } });
      assert.equal(changed.status, 200);
      assert.equal(Buffer.from(await changed.arrayBuffer()).length, size);

      const stale = await fetch(up.body.url, {
        headers: { range: 'bytes=0-9', 'if-range': '"another-version"' },
      });
      assert.equal(stale.status, 200, 'If-Range that does not match: the whole file');
      await stale.arrayBuffer();
      const dated = await fetch(up.body.url, {
        headers: { range: 'bytes=0-9', 'if-range': head.headers.get('last-modified')! },
      });
      assert.equal(dated.status, 206, 'If-Range naming the file by its date');
      await dated.arrayBuffer();

      const several = await get('bytes=0-1,5-9'); // several ranges: the whole file
      assert.equal(several.status, 200);
      assert.equal(Buffer.from(await several.arrayBuffer()).length, size);

      assert.deepEqual(parseRange('bytes=5-2', 10), { kind: 'whole' });
      assert.deepEqual(parseRange('items=0-1', 10), { kind: 'whole' });
      assert.deepEqual(parseRange('bytes=0-999', 10), { kind: 'partial', start: 0, end: 9 });
      assert.deepEqual(parseRange('bytes=-0', 10), { kind: 'unsatisfiable' });
    });
  });

  describe('file inputs at start (D4, D19)', () => {
    const doc = {
      slug: 'describe-photo',
      nodes: [
        { id: 'photo', type: 'user_input', label: 'Photo', input_type: 'image' },
        {
          id: 'attachment',
          type: 'user_input',
          label: 'Attachment',
          input_type: 'file',
          required: false,
        },
        { id: 'out', type: 'user_result', label: 'Photo Out' },
      ],
      edges: [{ from: 'photo', to: 'out' }],
    };

    it('refuses another account’s file id and an unknown one with 400 invalid_input_fields naming the field', async () => {
      await publish(ctx.svc.url, ctx.key, doc);
      const other = await ctx.newAccount();
      const theirs = (await uploadRaw(ctx.svc, other.key, png([7, 7, 7]))).body;
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: doc.slug, inputs: { photo: theirs.id } },
      });
      const error = expectError(res, {
        status: 400,
        type: 'invalid_request_error',
        code: 'invalid_input_fields',
        param: 'photo',
        message: ['photo'],
      });
      assert.match(detailFor(error, 'photo'), /not a file of this account/);

      const unknown = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: {
          workflowId: doc.slug,
          inputs: { photo: `file_01J${'0'.repeat(23)}`, attachment: 'not a url' },
        },
      });
      const both = expectError(unknown, {
        status: 400,
        type: 'invalid_request_error',
        code: 'invalid_input_fields',
      });
      assert.match(detailFor(both, 'photo'), /not a file of this account/);
      assert.match(detailFor(both, 'attachment'), /file_\.\.\.` id or an http\(s\) URL/);
    });

    it('refuses an http:// URL unless ALLOW_HTTP_URLS is set, and accepts the caller’s own file', async () => {
      const http = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: doc.slug, inputs: { photo: 'http://example.com/a.png' } },
      });
      assert.match(
        detailFor(
          expectError(http, {
            status: 400,
            type: 'invalid_request_error',
            code: 'invalid_input_fields',
          }),
          'photo',
        ),
        /https/,
      );
      const mine = (await uploadRaw(ctx.svc, ctx.key, png())).body;
      const ok = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: doc.slug, inputs: { photo: mine.id } },
      });
      assert.equal(ok.status, 202, JSON.stringify(ok.body)); // no worker in this file: accepted is enough
    });

    it('refuses at publish a default every start would refuse, naming its node', async () => {
      const other = await ctx.newAccount();
      const theirs = (await uploadRaw(ctx.svc, other.key, png([5, 5, 5]))).body;
      const mine = (await uploadRaw(ctx.svc, ctx.key, png([6, 6, 6]))).body;
      const withDefaults = (photo: string, attachment: string) => ({
        ...doc,
        slug: 'photo-defaults',
        nodes: [
          { ...doc.nodes[0], default: photo },
          { ...doc.nodes[1], default: attachment },
          doc.nodes[2],
        ],
      });
      const res = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
        key: ctx.key,
        body: withDefaults(theirs.id, 'http://example.com/a.pdf'),
      });
      const error = expectError(res, {
        status: 400,
        type: 'invalid_request_error',
        code: 'invalid_workflow',
        param: 'nodes[0].default',
      });
      assert.match(detailFor(error, 'nodes[0].default'), /not a file of this account/);
      assert.match(detailFor(error, 'nodes[1].default'), /https/);

      const ok = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
        key: ctx.key,
        body: withDefaults(mine.id, 'https://example.com/a.pdf'),
      });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
    });
  });

  describe('configuration', () => {
    it('requires FILE_URL_SECRET in production, and reads the file flags strictly', () => {
      const PAYLOAD_KEYS = `k1:${Buffer.alloc(32, 7).toString('base64')}`; // D32, also required in production
      assert.throws(
        () => loadConfig({ NODE_ENV: 'production', PAYLOAD_KEYS }),
        /FILE_URL_SECRET is required when NODE_ENV=production/,
      );
      assert.throws(() => loadConfig({ FILE_URL_SECRET: 'short' }), /FILE_URL_SECRET/);
      const config = loadConfig({
        NODE_ENV: 'production',
        PAYLOAD_KEYS,
        FILE_URL_SECRET: 'x'.repeat(32),
        ALLOW_HTTP_URLS: 'false',
        ALLOW_PRIVATE_HOSTS: 'Assets.Internal, cdn.local',
      });
      assert.equal(config.files.allowHttpUrls, false);
      assert.equal(config.files.allowPrivateNetwork, false);
      assert.deepEqual(config.files.allowPrivateHosts, ['assets.internal', 'cdn.local']);
      assert.equal(config.files.maxBytes, 256 * 1024 * 1024); // D10, D35: a million 200-byte rows
      assert.equal(config.files.urlTtlSeconds, 7 * 86_400); // D19: 7 days
      assert.throws(() => loadConfig({ ALLOW_PRIVATE_NETWORK: 'yes' }), /ALLOW_PRIVATE_NETWORK/);
    });
  });

  describe('description and retention', () => {
    it('lists the files endpoints in the OpenAPI document', async () => {
      const res = await call(ctx.svc.url, 'GET', '/api/v1/openapi.json');
      assert.ok(res.body.paths['/api/v1/files'].post);
      assert.ok(res.body.paths['/api/v1/files/{fileId}'].get);
      assert.ok(res.body.paths['/api/v1/files/{fileId}'].delete);
      assert.deepEqual(res.body.paths['/files/{fileId}/content'].get.security, []);
      assert.deepEqual(
        Object.keys(res.body.components.schemas.File.properties).sort(),
        FILE_FIELDS,
      );
    });

    it('D29: deleteFilesOlderThan removes old files with their chunks and their links stop working', async () => {
      const up = (await uploadRaw(ctx.svc, ctx.key, mp4(5_000), { name: 'old.mp4' })).body;
      // The chunk of an upload that died before GridFS wrote its files document, two days ago.
      const chunks = ctx.svc.store.db.collection('files.chunks');
      await chunks.insertOne({
        _id: ObjectId.createFromTime(Math.floor(Date.now() / 1000) - 2 * 86_400),
        files_id: 'file_orphan',
        n: 0,
        data: Buffer.from('x'),
      } as any);
      assert.equal(
        await deleteFilesOlderThan(ctx.svc.store.db, new Date(Date.now() - 86_400_000)),
        0,
        'no file is a day old',
      );
      assert.equal(
        await chunks.countDocuments({ files_id: 'file_orphan' }),
        0,
        'the orphaned chunk went',
      );
      assert.equal(
        await deleteFilesOlderThan(ctx.svc.store.db, new Date(Date.now() - 3_600_000)),
        0,
        'nothing is an hour old',
      );
      const removed = await deleteFilesOlderThan(ctx.svc.store.db, new Date(Date.now() + 1_000));
      assert.ok(removed >= 1);
      assert.equal(await filesCollection(ctx.svc.store.db).countDocuments(), 0);
      assert.equal(await ctx.svc.store.db.collection('files.chunks').countDocuments(), 0);
      expectError(await call(ctx.svc.url, 'GET', up.url.slice(ctx.svc.url.length)), {
        status: 404,
        type: 'not_found_error',
      });
    });
  });
});

describe('files: the storage quota of uploads and their delete (D19)', function () {
  this.timeout(60_000);
  const KIB = 1024;
  const ctx = useService({
    worker: false,
    env: { MAX_UPLOAD_BYTES: String(64 * KIB), FILE_STORAGE_MAX_BYTES: String(160 * KIB) },
  });
  const quotaError = {
    status: 413,
    type: 'invalid_request_error',
    code: 'storage_quota_exceeded',
  } as const;
  const remove = (key: string, fileId: string) =>
    call(ctx.svc.url, 'DELETE', `/api/v1/files/${fileId}`, { key });

  it('refuses an upload the quota has no room for (declared and streamed, keeping nothing); a delete makes room; other accounts are not touched', async () => {
    const { key } = await ctx.newAccount();
    const first = await uploadRaw(ctx.svc, key, Buffer.alloc(64 * KIB, 1), { name: 'a.bin' });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.equal((await uploadRaw(ctx.svc, key, Buffer.alloc(64 * KIB, 2))).status, 201);

    const before = await storedCounts(ctx.svc);
    const declared = await uploadRaw(ctx.svc, key, Buffer.alloc(33 * KIB, 3));
    expectError(declared as any, {
      ...quotaError,
      message: [`${128 * KIB} of the ${160 * KIB} bytes`],
    });
    // No Content-Length: refused once it grows past the 32 KiB left.
    const streamed = await uploadChunked(ctx.svc, key, 64 * KIB);
    assert.equal(streamed.status, 413, JSON.stringify(streamed.body));
    assert.equal(streamed.body.error.code, 'storage_quota_exceeded');
    assert.deepEqual(await storedCounts(ctx.svc), before, 'nothing of the refused uploads is kept');

    // What is left fits exactly; then nothing does.
    assert.equal((await uploadRaw(ctx.svc, key, Buffer.alloc(32 * KIB, 4))).status, 201);
    expectError((await uploadRaw(ctx.svc, key, Buffer.from('x'))) as any, quotaError);

    const other = await ctx.newAccount();
    assert.equal((await uploadRaw(ctx.svc, other.key, Buffer.alloc(64 * KIB, 5))).status, 201);

    const deleted = await remove(key, first.body.id);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.deepEqual(deleted.body, { id: first.body.id, object: 'file', deleted: true });
    expectError(await call(ctx.svc.url, 'GET', `/api/v1/files/${first.body.id}`, { key }), {
      status: 404,
      type: 'not_found_error',
      code: 'not_found',
    });
    expectError(await call(ctx.svc.url, 'GET', first.body.url.slice(ctx.svc.url.length)), {
      status: 404,
      type: 'not_found_error',
    });
    expectError(await remove(key, first.body.id), { status: 404, type: 'not_found_error' });
    assert.equal((await uploadRaw(ctx.svc, key, Buffer.alloc(64 * KIB, 6))).status, 201);
  });

  it('an account’s own quota (`wrs accounts file-storage`) wins over FILE_STORAGE_MAX_BYTES', async () => {
    const { accountId, key } = await ctx.newAccount();
    await setAccountCap(ctx.svc.store.collections, accountId, 'max_file_storage_bytes', 200 * KIB);
    for (let i = 0; i < 3; i++)
      assert.equal((await uploadRaw(ctx.svc, key, Buffer.alloc(64 * KIB, i))).status, 201);
    expectError((await uploadRaw(ctx.svc, key, Buffer.alloc(64 * KIB, 9))) as any, {
      ...quotaError,
      message: [`${192 * KIB} of the ${200 * KIB} bytes`],
    });
  });

  it('refuses a name given twice and a query parameter it does not take, storing nothing', async () => {
    const { key } = await ctx.newAccount();
    for (const query of ['?name=a.csv&name=b.csv', '?purpose=batch']) {
      const res = await fetch(`${ctx.svc.url}/api/v1/files${query}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
        body: 'a,b\n1,2\n',
      });
      const body = (await res.json()) as { error: { type: string; code?: string; param?: string } };
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(body.error.type, 'invalid_request_error');
      assert.equal(body.error.code, undefined); // docs/api.md: wrong query values have `param`, no `code`
      assert.equal(body.error.param, query.startsWith('?name') ? 'name' : 'purpose');
    }
    const list = await call(ctx.svc.url, 'GET', '/api/v1/files', { key });
    assert.deepEqual(list.body.data, []);
  });

  it("DELETE: another account's file and an unknown id are 404, a run's own file 409 file_of_run, no key 401", async () => {
    const mine = await ctx.newAccount();
    const other = await ctx.newAccount();
    const theirs = await uploadRaw(ctx.svc, other.key, Buffer.from('theirs'));
    expectError(await remove(mine.key, theirs.body.id), {
      status: 404,
      type: 'not_found_error',
      code: 'not_found',
    });
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/files/${theirs.body.id}`, { key: other.key }))
        .status,
      200,
    );
    expectError(await remove(mine.key, 'file_nope'), { status: 404, type: 'not_found_error' });
    expectError(await call(ctx.svc.url, 'DELETE', `/api/v1/files/${theirs.body.id}`), {
      status: 401,
      type: 'authentication_error',
      code: 'invalid_api_key',
    });

    // A node's output, as the worker stores it.
    const output = await storeBytes(ctx.svc.store.db, Buffer.from('an answer'), {
      accountId: mine.accountId,
      name: 'answer.txt',
      maxBytes: 64 * KIB,
      source: 'output',
      runId: 'run_01JAAAAAAAAAAAAAAAAAAAAAAA',
    });
    expectError(await remove(mine.key, output._id), {
      status: 409,
      type: 'invalid_request_error',
      code: 'file_of_run',
      message: ['run_01JAAAAAAAAAAAAAAAAAAAAAAA', 'DELETE /api/v1/runs/'],
    });
    assert.ok(await filesCollection(ctx.svc.store.db).findOne({ _id: output._id }), 'still there');
  });

  it("GET /api/v1/files lists the caller's uploads newest first, a page at a time, without a run's files or other accounts'", async () => {
    const mine = await ctx.newAccount();
    const other = await ctx.newAccount();
    const ids: string[] = [];
    for (const name of ['one.txt', 'two.txt', 'three.txt']) {
      const res = await uploadRaw(ctx.svc, mine.key, Buffer.from(name), { name });
      ids.push(res.body.id);
    }
    await uploadRaw(ctx.svc, other.key, Buffer.from('theirs'));
    await storeBytes(ctx.svc.store.db, Buffer.from('an answer'), {
      accountId: mine.accountId,
      name: 'answer.txt',
      maxBytes: 64 * KIB,
      source: 'output',
      runId: 'run_01JAAAAAAAAAAAAAAAAAAAAAAC',
    });
    const list = (query: string) =>
      call(ctx.svc.url, 'GET', `/api/v1/files${query}`, { key: mine.key });

    const first = await list('?limit=2');
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(
      first.body.data.map((f: any) => f.name),
      ['three.txt', 'two.txt'],
    );
    assert.deepEqual(
      [first.body.object, first.body.first_id, first.body.last_id, first.body.has_more],
      ['list', ids[2], ids[1], true],
    );
    const file = first.body.data[0];
    assert.equal(file.size, 'three.txt'.length);
    assert.ok(Date.parse(file.created_at) <= Date.now());
    assert.equal(await (await fetch(file.url)).text(), 'three.txt', 'each with a working link');

    const rest = await list(`?limit=2&starting_after=${first.body.last_id}`);
    assert.deepEqual(
      rest.body.data.map((f: any) => f.id),
      [ids[0]],
    );
    assert.equal(rest.body.has_more, false);
    expectError(await list('?starting_after=run_01JAAAAAAAAAAAAAAAAAAAAAAC'), {
      status: 400,
      type: 'invalid_request_error',
      param: 'starting_after',
    });
  });

  it('holds the most a write of unknown length may grow to, so concurrent ones cannot each take the whole room', async () => {
    const { accountId } = await ctx.newAccount();
    const quota = fileQuota(ctx.svc.store, { storageMaxBytes: 100 * KIB, maxBytes: 64 * KIB });
    // Two uploads without a Content-Length in flight at once: the first may grow to 64 KiB.
    const first = await quota.reserve(accountId, 0);
    assert.deepEqual([first.fits, first.room], [true, 100 * KIB]);
    const second = await quota.reserve(accountId, 0);
    assert.deepEqual([second.fits, second.room], [true, 36 * KIB], 'the first holds 64 KiB');
    const third = await quota.reserve(accountId, 0);
    assert.deepEqual([third.fits, third.room], [false, 0], 'the second holds the 36 KiB left');
    first.release();
    second.release();
    assert.equal((await quota.room(accountId)).room, 100 * KIB, 'released with their answers');
  });

  it("counts another process's uploads at once when the account is near its quota", async () => {
    const { accountId } = await ctx.newAccount();
    // Another API process's quota on the same store, within two uploads of the quota, where it
    // asks the store again after NEAR_MS (0 here); far from it, it would trust its sum for 30 s.
    const quota = fileQuota(
      ctx.svc.store,
      { storageMaxBytes: 100 * KIB, maxBytes: 64 * KIB },
      { staleMs: 60_000, nearMs: 0 },
    );
    assert.deepEqual(await quota.room(accountId), { room: 100 * KIB, used: 0, quota: 100 * KIB });
    const release = quota.hold(accountId, 10 * KIB); // an upload in flight here
    await storeBytes(ctx.svc.store.db, Buffer.alloc(50 * KIB), {
      accountId,
      name: 'elsewhere.bin',
      maxBytes: 64 * KIB,
      source: 'upload',
    });
    await storeBytes(ctx.svc.store.db, Buffer.alloc(20 * KIB), {
      accountId,
      name: 'output.bin',
      maxBytes: 64 * KIB,
      source: 'output', // a run's file: counted too
      runId: 'run_01JAAAAAAAAAAAAAAAAAAAAAAB',
    });
    assert.deepEqual(await quota.room(accountId), {
      room: 20 * KIB,
      used: 80 * KIB,
      quota: 100 * KIB,
    });
    release();
    assert.deepEqual(await quota.room(accountId), {
      room: 30 * KIB,
      used: 70 * KIB,
      quota: 100 * KIB,
    });
  });
});
