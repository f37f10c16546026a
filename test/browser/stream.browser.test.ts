// CORS in practice: a real browser on another origin starts a streaming run with fetch
// (Authorization header, so a CORS preflight) and reads its events, in headless Chromium.
// D34: the browser's native EventSource follows a stream link a backend minted, with no
// key, to [DONE], and stops there (its reconnect at the terminal event is answered 204).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { launchChromiumProfile, requireChromium } from '../support/browser';
import { startService, type TestService } from '../support/service';
import { newAccount } from '../support/accounts';
import { greetingWorkflow } from '../support/fixtures';
import { call, waitFor } from '../support/http';

const page = (apiUrl: string, key: string) => `<!doctype html>
<meta charset="utf-8"><title>stream</title>
<script>
window.result = (async () => {
  const res = await fetch(${JSON.stringify(apiUrl)} + '/api/v1/responses', {
    method: 'POST',
    headers: { Authorization: 'Bearer ${key}', 'Content-Type': 'application/json' },
    body: JSON.stringify({ workflowId: 'hello', stream: true, inputs: { name: 'Browser' } }),
  });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '', frames = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\\n\\n')) >= 0) {
      frames.push(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
    }
  }
  return { status: res.status, type: res.headers.get('content-type'), frames };
})();
</script>`;

describe('browser streaming (D11, D22)', function () {
  this.timeout(90_000);
  let svc: TestService;
  let browser: BrowserContext | undefined;
  let site: http.Server;
  let profile: string;

  before(async function () {
    requireChromium(); // fails in one line without it, never a silent skip
    svc = await startService();
  });
  after(async () => {
    await browser?.close();
    site?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await svc?.close();
  });

  it('starts a streaming run from another origin and reads every event to [DONE]', async () => {
    const { key } = await newAccount(svc.store.collections);
    assert.equal(
      (await call(svc.url, 'POST', '/api/v1/workflows', { key, body: greetingWorkflow('hello') }))
        .status,
      201,
    );
    site = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(req.url === '/blank' ? '<!doctype html><title>blank</title>' : page(svc.url, key));
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    // localhost vs 127.0.0.1 and another port: a different origin, so the browser enforces CORS.
    const origin = `http://localhost:${(site.address() as AddressInfo).port}`;
    profile = mkdtempSync(path.join(os.tmpdir(), 'wrs-chromium-'));
    browser = await launchChromiumProfile(profile);
    const preflights: string[] = [];
    svc.api.server.on('request', (req: http.IncomingMessage) => {
      if (req.method === 'OPTIONS')
        preflights.push(`${req.headers.origin} ${req.headers['access-control-request-headers']}`);
    });
    const tab = await browser.newPage();
    await tab.goto(origin);
    // Runs in the page, where `window` exists; the test's own tsconfig has no DOM types.
    const result = await tab.evaluate(() => (globalThis as any).result);
    assert.equal(result.status, 200);
    assert.deepEqual(preflights, [`${origin} authorization,content-type`]); // the browser asked, and was let through
    assert.match(result.type, /^text\/event-stream/);
    const data = result.frames
      .filter((f: string) => !f.startsWith(':'))
      .map((f: string) =>
        f
          .split('\n')
          .find((l) => l.startsWith('data: '))!
          .slice(6),
      );
    assert.equal(data.at(-1), '[DONE]');
    const types = data.slice(0, -1).map((d: string) => JSON.parse(d).type);
    assert.deepEqual(types, [
      'response.created',
      'response.output_item.added',
      'response.output_item.done',
      'response.completed',
    ]);
    const runId = JSON.parse(data[0]).response.run_id;
    const run = await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
    assert.equal(run.body.output.greeting[0].parts[0].text, 'Hello, Browser!');
  });

  it('a native EventSource follows a D34 stream link without a key, to [DONE], and stops', async function () {
    assert.ok(browser, 'the first test launched the browser');
    const { key } = await newAccount(svc.store.collections);
    await call(svc.url, 'POST', '/api/v1/workflows', { key, body: greetingWorkflow('linked') });
    const start = await call(svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'linked', inputs: { name: 'Link' } },
    });
    // The backend's part: it holds the key and mints the link.
    const link = await call(svc.url, 'POST', `/api/v1/runs/${start.body.run_id}/stream-link`, {
      key,
      body: { ttl_seconds: 300 },
    });
    assert.equal(link.status, 200);
    const hits: Array<{
      status: number;
      lastEventId: string | undefined;
      authorization: string | undefined;
    }> = [];
    svc.api.server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (!req.url?.startsWith('/streams/')) return;
      res.on('finish', () =>
        hits.push({
          status: res.statusCode,
          lastEventId: req.headers['last-event-id'] as string | undefined,
          authorization: req.headers.authorization,
        }),
      );
    });
    const tab = await browser!.newPage();
    await tab.goto(`http://localhost:${(site.address() as AddressInfo).port}/blank`);
    // From `starting_after=0`: every event after response.created, then [DONE]; the reconnect gets 204 and the source closes.
    const result = await tab.evaluate(
      (url: string) =>
        new Promise<{ data: string[]; closed: boolean }>((resolve) => {
          const g = globalThis as any;
          const source = new g.EventSource(`${url}&starting_after=0`);
          const data: string[] = [];
          source.onmessage = (e: any) => data.push(e.data);
          source.onerror = () => {
            if (source.readyState === g.EventSource.CLOSED) resolve({ data, closed: true });
          };
        }),
      link.body.url,
    );
    assert.ok(result.closed);
    assert.equal(result.data.at(-1), '[DONE]');
    const types = result.data.slice(0, -1).map((d) => JSON.parse(d).type);
    assert.deepEqual(types, [
      'response.resumed',
      'response.output_item.added',
      'response.output_item.done',
      'response.completed',
    ]);
    await waitFor(async () => (hits.length >= 2 ? true : undefined), { what: 'the 204 to finish' }); // it may trail the page's error event
    assert.deepEqual(
      hits.map((h) => [h.status, h.lastEventId ?? null, h.authorization ?? null]),
      [
        [200, null, null],
        [204, '3', null],
      ],
    );
  });
});
