/**
 * What a hostile tenant tries with an ordinary key, answered on the real stack: output keys named
 * like Object.prototype's properties, names JavaScript reserves, a forged `Host` header, bidi
 * characters in file names, active files served from our origin, and links and streams that
 * should die with a revoked key (D6, D19, D34).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { call, waitFor } from '../support/http';
import { expectError } from '../support/api-assert';
import { promptWorkflow, publish, waitForRun } from '../support/fixtures';
import { startRun } from '../support/runs';
import { openSse } from '../support/sse';
import { temporalClient } from '../support/service';
import { useService } from '../support/use-service';
import { pdf, png } from '../fakes/media';
import { issueKey, revokeKey } from '../../store/accounts';

/** A request with a `Host` header of our choosing (fetch always sends the URL's). */
function withHost(
  url: string,
  method: string,
  path: string,
  host: string,
  key: string,
  body?: Buffer,
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}${path}`,
      {
        method,
        headers: {
          host,
          authorization: `Bearer ${key}`,
          ...(body ? { 'content-type': 'application/octet-stream' } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function upload(url: string, key: string, bytes: Buffer, name: string): Promise<any> {
  const res = await fetch(`${url}/api/v1/files?name=${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
    body: bytes,
  });
  assert.equal(res.status, 201);
  return res.json();
}

describe('a hostile tenant with an ordinary key', function () {
  this.timeout(120_000);
  const ctx = useService({ fakeOpenAI: true });

  describe('output keys and placeholders named like JavaScript internals', () => {
    it('answers 404 for an output key of Object.prototype (`constructor`, `__proto__`, `toString`)', async () => {
      await publish(ctx.svc.url, ctx.key, promptWorkflow('proto-out', 'Say'));
      const runId = await startRun(ctx.svc.url, ctx.key, 'proto-out', { topic: 'x' });
      assert.equal((await waitForRun(ctx.svc.url, ctx.key, runId)).status, 'completed');
      for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
        const res = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/${name}`, {
          key: ctx.key,
        });
        expectError(res, { status: 404, type: 'not_found_error', code: 'not_found' });
      }
      const known = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/answer`, {
        key: ctx.key,
      });
      assert.equal(known.status, 200);
      assert.equal(known.body.data.length, 1);
    });

    it('renders `constructor` and `toString` like any name, and refuses `__proto__` at publish', async () => {
      const doc = {
        slug: 'proto-names',
        nodes: [
          { id: 'constructor', type: 'user_input', label: 'Constructor', input_type: 'text' },
          { id: 'valueOf', type: 'user_input', label: 'To String', input_type: 'text' },
          { id: 'toString', type: 'text', template: '{{constructor}}+{{toString}}' },
          { id: 'out', type: 'user_result', label: 'Out' },
        ],
        edges: [
          { from: 'constructor', to: 'toString', port: 'constructor' },
          { from: 'valueOf', to: 'toString', port: 'toString' },
          { from: 'toString', to: 'out' },
        ],
      };
      await publish(ctx.svc.url, ctx.key, doc);
      const runId = await startRun(ctx.svc.url, ctx.key, 'proto-names', {
        constructor: 'A',
        to_string: 'B',
      });
      const run = await waitForRun(ctx.svc.url, ctx.key, runId);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.equal(run.output.out[0].parts[0].text, 'A+B');

      const reserved = structuredClone(doc);
      reserved.slug = 'proto-reserved';
      reserved.nodes[2].template = '{{constructor}}+{{__proto__}}';
      reserved.edges[1].port = '__proto__';
      const res = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
        key: ctx.key,
        body: reserved,
      });
      const error = expectError(res, {
        status: 400,
        type: 'invalid_request_error',
        code: 'invalid_workflow',
      });
      assert.ok(
        error.details.some(
          (d: any) => d.field === 'nodes[2].template' && d.problem.includes('__proto__'),
        ),
        JSON.stringify(error.details),
      );
    });
  });

  describe('files and links', () => {
    it('never builds a link from the `Host` header', async () => {
      const evil = 'evil.example';
      const uploaded = await withHost(
        ctx.svc.url,
        'POST',
        '/api/v1/files?name=a.png',
        evil,
        ctx.key,
        png(),
      );
      assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
      const reissued = await withHost(
        ctx.svc.url,
        'GET',
        `/api/v1/files/${uploaded.body.id}`,
        evil,
        ctx.key,
      );
      await publish(ctx.svc.url, ctx.key, promptWorkflow('host-flow', 'Say'));
      const runId = await startRun(ctx.svc.url, ctx.key, 'host-flow', { topic: 'x' });
      const link = await withHost(
        ctx.svc.url,
        'POST',
        `/api/v1/runs/${runId}/stream-link`,
        evil,
        ctx.key,
      );
      for (const url of [uploaded.body.url, reissued.body.url, link.body.url]) {
        assert.ok(!url.includes(evil), url);
        assert.ok(url.startsWith(`${ctx.svc.url}/`), `${url} is not under ${ctx.svc.url}`);
      }
      assert.equal((await fetch(uploaded.body.url)).status, 200, 'the link works');
    });

    it('drops bidi and control characters from file names, stored and in Content-Disposition', async () => {
      const file = await upload(ctx.svc.url, ctx.key, png(), 'invoice\u202Egnp.exe\u200B.png');
      assert.equal(file.name, 'invoicegnp.exe.png');
      const content = await fetch(file.url);
      const disposition = content.headers.get('content-disposition') ?? '';
      assert.ok(!/%E2%80%AE|%E2%80%8B|\u202E/i.test(disposition), disposition);
      assert.match(disposition, /filename\*=UTF-8''invoicegnp\.exe\.png/);
    });

    it('serves every file, PDFs too, sandboxed and unsniffed; a PDF as a download', async () => {
      for (const [bytes, name] of [
        [pdf(), 'report.pdf'],
        [png(), 'image.png'],
      ] as const) {
        const file = await upload(ctx.svc.url, ctx.key, bytes, name);
        const content = await fetch(file.url);
        assert.equal(content.status, 200);
        assert.match(content.headers.get('content-security-policy') ?? '', /\bsandbox\b/, name);
        assert.equal(content.headers.get('x-content-type-options'), 'nosniff');
        assert.match(
          content.headers.get('content-disposition') ?? '',
          name.endsWith('.pdf') ? /^attachment;/ : /^inline;/,
        );
      }
    });
  });

  describe('a revoked key', () => {
    it("ends its file links, stream links and open streams (within the key cache's 2 s)", async () => {
      const victim = await ctx.newAccount();
      await publish(ctx.svc.url, victim.key, promptWorkflow('slow-flow', 'slow:30000'));
      const file = await upload(ctx.svc.url, victim.key, png(), 'a.png');
      const runId = await startRun(ctx.svc.url, victim.key, 'slow-flow', { topic: 'x' });
      const minted = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, {
        key: victim.key,
      });
      assert.equal(minted.status, 200);
      assert.equal((await fetch(file.url)).status, 200);
      const byKey = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream`, {
        key: victim.key,
      });
      const byLink = await openSse(minted.body.url);
      for (const stream of [byKey, byLink]) {
        assert.equal(stream.status, 200);
        await stream.until((f) => f.event?.type === 'response.resumed');
      }

      assert.ok(await revokeKey(ctx.svc.store.collections, victim.keyId));
      const revokedAt = Date.now();
      for (const stream of [byKey, byLink]) {
        const last = await stream.until((f) => f.event?.type === 'error', 10_000);
        assert.equal(last.event.error.code, 'key_revoked');
        await stream.closed;
        assert.ok(
          !stream.frames.some((f) => f.data === '[DONE]'),
          'a revoked stream is no run end',
        );
      }
      assert.ok(Date.now() - revokedAt < 5_000, 'streams end within the cache TTL and a poll');
      for (const url of [file.url, minted.body.url]) {
        const res = await waitFor(
          async () => {
            const r = await call(url, 'GET', '', { timeoutMs: 5_000 });
            return r.status === 403 ? r : undefined;
          },
          { timeoutMs: 5_000, intervalMs: 200, what: `${url} refused` },
        );
        expectError(res, { status: 403, type: 'invalid_request_error', code: 'key_revoked' });
      }
      await temporalClient(ctx.svc).workflow.getHandle(runId).cancel(); // no need to wait 30 s
    });

    it('does not cut a streaming repeat (D18) made with a new key when the run was started by a key revoked since', async () => {
      const rotated = await ctx.newAccount();
      await publish(ctx.svc.url, rotated.key, promptWorkflow('rotate-flow', 'slow:8000'));
      const start = (key: string) =>
        openSse(`${ctx.svc.url}/api/v1/responses`, {
          method: 'POST',
          key,
          headers: { 'idempotency-key': 'rotate-1' },
          body: { workflowId: 'rotate-flow', stream: true, inputs: { topic: 'x' } },
        });
      const first = await start(rotated.key);
      await first.until((f) => f.event?.type === 'response.created');
      first.abort(); // the connection dropped; the client retries with the key that replaced this one
      const { secret } = await issueKey(ctx.svc.store.collections, rotated.accountId);
      assert.ok(await revokeKey(ctx.svc.store.collections, rotated.keyId));
      await waitFor(
        async () =>
          (await call(ctx.svc.url, 'GET', '/api/v1/account', { key: rotated.key })).status ===
            401 || undefined,
        { what: 'the first key refused' },
      );
      const repeat = await start(secret);
      assert.equal(repeat.status, 200);
      await repeat.closed;
      assert.ok(
        !repeat.frames.some((f) => f.event?.type === 'error'),
        repeat.frames.map((f) => f.data).join('\n'),
      );
      assert.equal(repeat.frames.at(-1)?.data, '[DONE]');
    });
  });
});
