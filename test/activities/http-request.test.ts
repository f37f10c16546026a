/**
 * The http_request node behind the SSRF guard (activities/http-request.ts, lib/net/ssrf.ts): a URL
 * rendered by a published workflow may not reach our own network. The activity is called
 * directly first (outside Temporal, on loopback servers), then a real run on a service with
 * the production default (ALLOW_PRIVATE_NETWORK unset) shows what a caller gets: the run
 * completes, the refused item fails with a provider_error naming the refusal (D9), and the
 * target never sees a request.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { ApplicationFailure } from '@temporalio/common';
import { createHttpRequestActivity } from '../../activities/http-request';
import type { OutboundGuard } from '../../activities/provider-http';
import type { FileDeps } from '../../activities/files';
import { createActivities } from '../../activities';
import { loadConfig } from '../../config';
import type { Collections } from '../../store/db';
import { invalidNodeConfig } from '../../activities/failures';
import type { NodeRequest } from '../../activities/types';
import type { Item } from '../../domain/parts';
import { publish, waitForRun } from '../support/fixtures';
import { call } from '../support/http';
import { temporalClient } from '../support/service';
import { useService } from '../support/use-service';

interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface Target {
  origin: string;
  port: number;
  seen: Seen[];
  close(): Promise<void>;
}

/**
 * A loopback server: /r/<status>?to=<url> redirects, /loop/<n> redirects to /loop/<n+1> forever,
 * /gzip answers gzipped JSON (/bad-gzip says gzip and is not, /gzip-bomb decodes to 1,000 times its size), /no-content a 204 that names JSON,
 * /deep/<n> JSON nested n deep, anything else echoes the request as JSON.
 */
async function startTarget(host = '127.0.0.1'): Promise<Target> {
  const seen: Seen[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://x');
    const request = {
      method: req.method ?? '',
      path: url.pathname,
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    seen.push(request);
    const redirect = /^\/r\/(\d{3})$/.exec(url.pathname);
    if (redirect) {
      res.writeHead(Number(redirect[1]), { location: url.searchParams.get('to')! });
      return res.end();
    }
    const loop = /^\/loop\/(\d+)$/.exec(url.pathname);
    if (loop) {
      res.writeHead(302, { location: `/loop/${Number(loop[1]) + 1}` });
      return res.end();
    }
    const deep = /^\/deep\/(\d+)$/.exec(url.pathname);
    if (deep) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('['.repeat(Number(deep[1])) + ']'.repeat(Number(deep[1])));
    }
    if (url.pathname === '/gzip') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      return res.end(zlib.gzipSync(JSON.stringify({ zipped: true })));
    }
    if (url.pathname === '/gzip-bomb') {
      // 4 MiB of JSON in about 4 KB: a thousand times as many bytes decoded as sent.
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      return res.end(zlib.gzipSync(`[${' '.repeat(4 * 1024 * 1024)}]`, { level: 9 }));
    }
    if (url.pathname === '/bad-gzip') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      return res.end('these bytes are not gzip');
    }
    if (url.pathname === '/no-content') {
      res.writeHead(204, { 'content-type': 'application/json' });
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        method: request.method,
        path: request.path,
        body: request.body,
        authorization: req.headers.authorization ?? null,
        content_type: req.headers['content-type'] ?? null,
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://${host}:${port}`,
    port,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const textItem = (text: string): Item => ({ status: 'completed', parts: [{ type: 'text', text }] });

/** One iteration of an http_request node whose url is `{{url}}`, fed by the `url` port (as a rendered workflow would be). */
function request(
  url: string,
  node: Record<string, unknown> = {},
  ports: Record<string, Item> = {},
): NodeRequest<'http_request'> {
  return {
    runId: 'run_test',
    iteration: 0,
    node: {
      id: 'call',
      type: 'http_request',
      method: 'GET',
      url: '{{url}}',
      ...node,
    } as NodeRequest<'http_request'>['node'],
    ports: { url: textItem(url), ...ports },
  };
}

/** A worker without file storage: the production default applies (private addresses refused). */
const noFiles = (): FileDeps => {
  throw invalidNodeConfig('this worker has no file storage configured');
};
/** The activity as a worker configured with ALLOW_PRIVATE_NETWORK=<allow> builds it (activities/index.ts). */
const configured = (allow: boolean) =>
  createActivities({
    collections: {} as Collections,
    config: loadConfig({ ALLOW_PRIVATE_NETWORK: String(allow) }),
  }).httpRequest;

const activity = (guard?: OutboundGuard, files: () => FileDeps = noFiles) =>
  createHttpRequestActivity({ files, guard });

/** Asserts a permanent item failure (ProviderRejected, non-retryable) whose message matches. */
async function rejected(work: Promise<unknown>, why: RegExp): Promise<void> {
  await assert.rejects(work, (err: unknown) => {
    assert.ok(err instanceof ApplicationFailure, String(err));
    assert.equal(err.type, 'ProviderRejected');
    assert.equal(err.nonRetryable, true);
    assert.match(err.message, why);
    return true;
  });
}

const json = (result: { items: Item[] }) => {
  assert.equal(result.items.length, 1);
  const part = result.items[0].parts[0];
  assert.equal(part.type, 'json');
  return (part as { data: any }).data;
};

describe('http_request node behind the SSRF guard', function () {
  this.timeout(60_000);
  let target: Target;
  let other: Target;
  before(async () => {
    [target, other] = await Promise.all([startTarget('127.0.0.1'), startTarget('127.0.0.2')]);
  });
  after(async () => {
    await target?.close();
    await other?.close();
  });

  describe('the activity', () => {
    it('refuses loopback, private, metadata and IPv6 loopback addresses by default, before connecting', async () => {
      const run = activity();
      const before = target.seen.length;
      await rejected(
        run(request(`${target.origin}/json`)),
        /^http:\/\/127\.0\.0\.1:\d+ is refused: 127\.0\.0\.1, a loopback address$/,
      );
      await rejected(
        run(request('http://10.0.0.1/internal')),
        /10\.0\.0\.1, a private network address/,
      );
      await rejected(
        run(request('http://169.254.169.254/latest/meta-data/iam/security-credentials/')),
        /169\.254\.169\.254, a cloud metadata address/,
      );
      await rejected(run(request(`http://[::1]:${target.port}/json`)), /::1, a loopback address/);
      await rejected(run(request('https://[fd00:ec2::254]/latest/')), /metadata/);
      // The same default from a worker configured without ALLOW_PRIVATE_NETWORK.
      await rejected(configured(false)(request(`${target.origin}/json`)), /loopback/);
      assert.equal(target.seen.length, before, 'the loopback target never saw a request');
    });

    it('refuses host names that resolve to loopback: localhost by the system resolver, any name by an injected one', async () => {
      const before = target.seen.length;
      await rejected(
        activity()(request(`http://localhost:${target.port}/json`)),
        /localhost resolves to (127\.0\.0\.1|::1), a loopback address/,
      );
      const resolve = async () => [{ address: '127.0.0.1', family: 4 }];
      await rejected(
        activity({ allowPrivate: false, resolve })(
          request(`http://api.example.test:${target.port}/json`),
        ),
        /api\.example\.test resolves to 127\.0\.0\.1, a loopback address/,
      );
      assert.equal(target.seen.length, before);
    });

    it('refuses a redirect from an allowed host to a private address, after the first hop only', async () => {
      const run = activity({ allowPrivate: false, allowedHosts: ['127.0.0.2'] });
      const before = target.seen.length;
      const otherBefore = other.seen.length;
      await rejected(
        run(request(`${other.origin}/r/302?to=${encodeURIComponent(`${target.origin}/json`)}`)),
        /127\.0\.0\.1, a loopback address/,
      );
      await rejected(
        run(
          request(
            `${other.origin}/r/307?to=${encodeURIComponent('http://169.254.169.254/latest/')}`,
            { method: 'POST', body: 'x' },
          ),
        ),
        /metadata/,
      );
      assert.deepEqual(
        other.seen.slice(otherBefore).map((r) => `${r.method} ${r.path}`),
        ['GET /r/302', 'POST /r/307'],
      );
      assert.equal(target.seen.length, before, 'the redirect target was never contacted');
    });

    it('reaches private addresses when configuration allows it (ALLOW_PRIVATE_NETWORK or an explicit guard)', async () => {
      for (const run of [configured(true), activity({ allowPrivate: true })]) {
        const result = await run(request(`${target.origin}/json`));
        assert.deepEqual(json(result), {
          method: 'GET',
          path: '/json',
          body: '',
          authorization: null,
          content_type: null,
        });
        assert.equal(result.costUsd, 0);
      }
    });

    it('keeps a POST’s method and body across a 307, with fetch’s default Content-Type for a text body', async () => {
      const before = target.seen.length;
      const result = await activity({ allowPrivate: true })(
        request(
          `${target.origin}/r/307?to=/echo`,
          { method: 'POST', body: 'topic={{topic}}' },
          { topic: textItem('kites') },
        ),
      );
      assert.deepEqual(json(result), {
        method: 'POST',
        path: '/echo',
        body: 'topic=kites',
        authorization: null,
        content_type: 'text/plain;charset=UTF-8',
      });
      assert.deepEqual(
        target.seen.slice(before).map((r) => `${r.method} ${r.path} ${r.body}`),
        ['POST /r/307 topic=kites', 'POST /echo topic=kites'],
      );
    });

    it('never sends Authorization to another origin after a redirect (the first origin gets it)', async () => {
      const run = activity({ allowPrivate: true });
      const headers = { Authorization: 'Bearer {{token}}' };
      const ports = { token: textItem('s3cret') };
      const before = target.seen.length;
      const cross = await run(
        request(
          `${target.origin}/r/302?to=${encodeURIComponent(`${other.origin}/echo`)}`,
          { headers },
          ports,
        ),
      );
      assert.equal(json(cross).authorization, null);
      assert.equal(target.seen[before].headers.authorization, 'Bearer s3cret');
      const same = await run(request(`${target.origin}/r/302?to=/echo`, { headers }, ports));
      assert.equal(json(same).authorization, 'Bearer s3cret', 'a same-origin redirect keeps it');
    });

    it('fails the item for good after more than 5 redirects, and decodes a gzipped answer as fetch did', async () => {
      const run = activity({ allowPrivate: true });
      const before = target.seen.length;
      await rejected(
        run(request(`${target.origin}/loop/0`)),
        /more than 5 redirects from http:\/\/127\.0\.0\.1:\d+$/,
      );
      assert.equal(target.seen.length - before, 6, 'the first request and 5 redirects');
      assert.deepEqual(
        json(
          await run(request(`${target.origin}/gzip`, { headers: { 'Accept-Encoding': 'gzip' } })),
        ),
        { zipped: true },
      );
    });
  });

  describe('the answer', () => {
    it('fails the item for good when it does not decode as its content-encoding says (sent again, it would not either)', async () => {
      const run = activity({ allowPrivate: true });
      const before = target.seen.length;
      await rejected(
        run(request(`${target.origin}/bad-gzip`)),
        /^the answer of 127\.0\.0\.1:\d+ does not decode as its content-encoding 'gzip' says: incorrect header check$/,
      );
      assert.equal(target.seen.length - before, 1);
    });

    it('fails the item for good when it decodes to more than MAX_DECODED_RATIO times its bytes past the floor (before: decoded whole, a binary one stored, ×1.2 million)', async () => {
      const run = activity({ allowPrivate: true });
      await rejected(
        run(request(`${target.origin}/gzip-bomb`)),
        /^the answer of 127\.0\.0\.1:\d+ is refused: its \d+ bytes of 'gzip' decoded past \d+ bytes, more than 100 times as many$/,
      );
    });

    it('completes a 204 as an empty text, even when it names JSON', async () => {
      const run = activity({ allowPrivate: true });
      assert.deepEqual((await run(request(`${target.origin}/no-content`))).items, [textItem('')]);
    });

    it('fails the item for good when its JSON nests deeper than 64 levels (60,000 deep overflowed the stack and failed the whole node after five attempts)', async () => {
      const run = activity({ allowPrivate: true });
      await rejected(
        run(request(`${target.origin}/deep/60000`)),
        /^the answer's JSON nests deeper than 64 levels$/,
      );
      await rejected(run(request(`${target.origin}/deep/65`)), /nests deeper than 64 levels/);
      let data = json(await run(request(`${target.origin}/deep/64`)));
      for (let depth = 1; depth < 64; depth++) data = data[0];
      assert.deepEqual(data, []);
    });
  });

  describe('a run on a service with the production default', () => {
    const ctx = useService({ account: false }); // ALLOW_PRIVATE_NETWORK unset, as in production

    it('completes with each refused request as a failed item naming the refusal; no request reaches the target', async () => {
      const { key } = await ctx.newAccount();
      const urls = [
        `${target.origin}/json`,
        'http://10.0.0.1/admin',
        'http://169.254.169.254/latest/meta-data/',
        `http://localhost:${target.port}/json`,
      ];
      const doc = {
        slug: 'ssrf-probe',
        nodes: [
          { id: 'urls', type: 'batch', rows: urls },
          {
            id: 'probe',
            type: 'http_request',
            method: 'POST',
            url: '{{u}}',
            body: 'probe',
            headers: { authorization: 'Bearer x' },
          },
          { id: 'out', type: 'user_result', label: 'Answers' },
        ],
        edges: [
          { from: 'urls', to: 'probe', port: 'u' },
          { from: 'probe', to: 'out' },
        ],
      };
      await publish(ctx.svc.url, key, doc);
      const before = target.seen.length;
      const started = Date.now();
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key,
        body: { workflowId: doc.slug, inputs: {} },
      });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      const run = await waitForRun(ctx.svc.url, key, res.body.run_id);
      const elapsed = Date.now() - started;
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.equal(run.error, null);
      const items = run.output.answers;
      assert.deepEqual(
        items.map((i: any) => i.status),
        ['failed', 'failed', 'failed', 'failed'],
      );
      const reasons = [
        /127\.0\.0\.1, a loopback address/,
        /10\.0\.0\.1, a private network address/,
        /169\.254\.169\.254, a cloud metadata address/,
        /localhost resolves to .*a loopback address/,
      ];
      items.forEach((item: any, i: number) => {
        assert.deepEqual(item.parts, []);
        assert.equal(item.error.type, 'provider_error');
        assert.equal(item.error.code, undefined, 'no HTTP status: nothing answered');
        assert.match(item.error.message, /is refused: /);
        assert.match(item.error.message, reasons[i]);
      });
      assert.equal(target.seen.length, before, 'the target received nothing');
      // Not retried: a refusal is permanent, so each item's activity ran once (one ActivityTaskStarted each).
      const history = await temporalClient(ctx.svc).workflow.getHandle(run.id).fetchHistory();
      const started_ = (history.events ?? []).filter(
        (e) =>
          e.activityTaskStartedEventAttributes &&
          e.activityTaskStartedEventAttributes.attempt === 1,
      ).length;
      const retried = (history.events ?? []).filter(
        (e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1,
      ).length;
      assert.equal(retried, 0, 'no activity attempt after the first');
      console.log(
        `      run ${run.id}: ${elapsed} ms, ${history.events?.length} history events, ${started_} activity attempts`,
      );
    });
  });
});
