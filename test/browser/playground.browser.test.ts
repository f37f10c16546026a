// The playground page at `/`, driven in real Chromium against the real stack: the
// hello form streamed to its greeting, a PNG uploaded (with progress) and shown from its signed
// link, a slow run cancelled, a dropped stream resumed with Last-Event-ID, a finished run
// reopened from the list, and the page at 375 px and from the keyboard. Screenshots go to
// $TMPDIR/wrs-playground-screenshots; docs/playground-desktop.png and -mobile.png are copies.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, requireChromium } from '../support/browser';
import { startService, type TestService } from '../support/service';
import { newAccount } from '../support/accounts';
import { llmWorkflow, publish, textRowsWorkflow, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import { png } from '../fakes/media';

const SHOTS = path.join(os.tmpdir(), 'wrs-playground-screenshots');
const hello = JSON.parse(readFileSync(path.join(__dirname, '../../examples/hello.json'), 'utf8'));
const typed = {
  slug: 'typed',
  nodes: [
    { id: 't', type: 'user_input', label: 'Title', input_type: 'text' },
    { id: 'n', type: 'user_input', label: 'Count', input_type: 'number' },
    { id: 'b', type: 'user_input', label: 'Loud', input_type: 'boolean', required: false },
    { id: 'j', type: 'user_input', label: 'Options', input_type: 'json', required: false },
    { id: 'line', type: 'text', template: '{{t}} {{n}} {{b}} {{j}}' },
    { id: 'out', type: 'user_result', label: 'Line' },
  ],
  edges: [
    ...['t', 'n', 'b', 'j'].map((id) => ({ from: id, to: 'line', port: id })),
    { from: 'line', to: 'out' },
  ],
};
const echoPhoto = {
  slug: 'echo-photo',
  name: 'Echo photo',
  nodes: [
    {
      id: 'photo',
      type: 'user_input',
      label: 'Photo',
      input_type: 'image',
      description: 'Any picture.',
    },
    {
      id: 'caption',
      type: 'user_input',
      label: 'Caption',
      input_type: 'text',
      required: false,
      default: 'A photo',
    },
    { id: 'out', type: 'user_result', label: 'Photo Out' },
    { id: 'caption_out', type: 'user_result', label: 'Caption Out' },
  ],
  edges: [
    { from: 'photo', to: 'out' },
    { from: 'caption', to: 'caption_out' },
  ],
};

describe('playground page', function () {
  this.timeout(120_000);
  let svc: TestService;
  let openai: FakeOpenAI;
  let browser: Browser;
  let page: Page;
  let key: string;
  const problems: string[] = []; // console errors and CSP violations: none are expected
  let helloRunId: string;

  const shot = (name: string, target: Page = page) =>
    target.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  const names: Record<string, string> = {
    hello: 'Hello (hello)',
    'echo-photo': 'Echo photo (echo-photo)',
    typed: 'typed',
    'slow-answer': 'slow-answer',
  };
  const workflowPicker = (target: Page) =>
    target.getByRole('combobox', { name: 'Workflow', exact: true });
  const chooseWorkflow = (target: Page, slug: string) =>
    workflowPicker(target).selectOption({ label: names[slug] });
  const status = (target: Page = page) => target.locator('#run-status .badge');

  /** Drops the connection of the next streaming start right after its first event, while the run still works. */
  function cutNextStartAfterFirstEvent(): void {
    const cut = (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.method !== 'POST' || req.url !== '/api/v1/responses') return;
      svc.api.server.off('request', cut);
      const write = res.write.bind(res) as (chunk: unknown, done?: () => void) => boolean;
      let cutting = false;
      res.write = ((chunk: unknown) => {
        // Nothing after the first event reaches the browser, however soon the run's next event comes.
        if (cutting) return true;
        if (!String(chunk).includes('response.created')) return write(chunk);
        cutting = true;
        // Handed to the kernel first, and read by the browser before the reset: a reset drops unread data.
        return write(chunk, () => setTimeout(() => req.socket.destroy(), 200));
      }) as typeof res.write;
    };
    svc.api.server.on('request', cut);
  }

  async function openPage(viewport: { width: number; height: number }): Promise<Page> {
    const tab = await browser.newPage({ viewport });
    tab.on('console', (m) => {
      // The resume test cuts a stream on purpose: that one failed load is expected.
      if (m.type() === 'error' && !m.text().includes('ERR_INCOMPLETE_CHUNKED_ENCODING'))
        problems.push(m.text());
    });
    tab.on('pageerror', (e) => problems.push(e.message));
    await tab.goto(`${svc.url}/`);
    await tab.getByLabel('API key').fill(key);
    await tab.getByRole('button', { name: 'Use key' }).click();
    await workflowPicker(tab).locator('option').first().waitFor({ state: 'attached' });
    return tab;
  }

  before(async function () {
    requireChromium(); // fails in one line without it, never a silent skip
    mkdirSync(SHOTS, { recursive: true });
    openai = await startFakeOpenAI();
    svc = await startService({ env: { OPENAI_BASE_URL: openai.baseUrl } });
    ({ key } = await newAccount(svc.store.collections));
    for (const doc of [
      hello,
      echoPhoto,
      typed,
      llmWorkflow('slow-answer'),
      textRowsWorkflow('many-rows', 'row {{row}}'),
    ])
      await publish(svc.url, key, doc);
    browser = await launchChromium();
    page = await openPage({ width: 1280, height: 900 });
  });
  after(async () => {
    await browser?.close();
    await svc?.close();
    await openai?.close();
  });

  it('serves the page with a strict CSP, revalidation by ETag and immutable hashed assets', async () => {
    const res = await fetch(`${svc.url}/`);
    assert.equal(res.status, 200);
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const rule of [
      "default-src 'self'",
      "script-src 'self'",
      "connect-src 'self'",
      "img-src 'self' data: blob:",
      "frame-ancestors 'none'",
    ])
      assert.ok(csp.includes(rule), csp);
    assert.ok(!csp.includes('unsafe-inline'), csp);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const html = await res.text();
    assert.ok(
      !/<script>|<style>|\sstyle=|\son\w+=/.test(html),
      'no inline script, style or handler',
    );
    // Not fetch: a conditional fetch() adds `Cache-Control: no-cache`, which rightly bypasses the check.
    const again = await new Promise<number>((resolve, reject) =>
      http
        .get(`${svc.url}/`, { headers: { 'if-none-match': res.headers.get('etag')! } }, (r) =>
          resolve(r.resume().statusCode!),
        )
        .on('error', reject),
    );
    assert.equal(again, 304);
    const script = /src="(\/playground\/app\.[0-9a-f]{12}\.js)"/.exec(html)![1];
    const asset = await fetch(svc.url + script);
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get('content-type')!, /^text\/javascript/);
    assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal((await fetch(`${svc.url}/playground/app.000000000000.js`)).status, 404);
  });

  it('fills the hello form, streams the run and shows the greeting, its events and the code', async () => {
    await chooseWorkflow(page, 'hello');
    assert.equal(
      await page.locator('.field-error:visible').count(),
      0,
      'no complaint before the user acts',
    );
    await page.getByLabel('Name').fill('Ada');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.locator('#outputs pre.text', { hasText: 'Hello, Ada!' }).waitFor();
    assert.equal(await status().textContent(), 'completed');
    const events = await page.locator('#timeline li .what').allTextContents();
    assert.match(events[0], /^created run_/);
    assert.deepEqual(events.slice(1), ['item 1 started', 'item 1 done', 'completed']);
    helloRunId = (await page.locator('#run-id').textContent())!;
    assert.equal(
      (await waitForRun(svc.url, key, helloRunId)).output.greeting[0].parts[0].text,
      'Hello, Ada!',
    );
    // D35: the output's results file as CSV, saved by the browser.
    const [csv] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    assert.equal(csv.suggestedFilename(), `${helloRunId}-greeting.csv`);
    assert.match(
      readFileSync((await csv.path())!, 'utf8'),
      /^item_index,id,status,output,error\r\n0,item_\w+,completed,"Hello, Ada!",\r\n$/,
    );

    const code = page.locator('#code');
    assert.match(
      (await code.textContent())!,
      /curl -N http:\/\/127\.0\.0\.1:\d+\/api\/v1\/responses[\s\S]*"workflowId":"hello","stream":true,"inputs":\{"name":"Ada"\}/,
    );
    await page.getByRole('button', { name: 'TypeScript' }).click();
    assert.match(
      (await code.textContent())!,
      /import \{ WrsClient \} from '\.\/client';[\s\S]*wrs\.start\(\{\n {2}"workflowId": "hello",\n {2}"inputs": \{\n {4}"name": "Ada"/,
    );
    await page.getByRole('button', { name: 'Python' }).click();
    const python = (await code.textContent())!;
    assert.match(
      python,
      /from wrs_client import WrsClient\n\nwith WrsClient\("http:\/\/127\.0\.0\.1:\d+", api_key=os\.environ\["WRS_API_KEY"\]\) as client:\n {4}started = client\.start\("hello", inputs=\{\n {8}"name": "Ada",\n {4}\}\)\n {4}run = client\.wait\(started\["run_id"\]\)/,
    );
    assert.ok(
      !python.includes(key) && !(await page.content()).includes(key.slice(8)),
      'the key is never shown in code',
    );
    await page.getByRole('button', { name: 'curl' }).click();
    await shot('hello');
  });

  it('uploads a PNG with progress for an image input, and shows it inline from its signed link', async () => {
    await chooseWorkflow(page, 'echo-photo');
    assert.equal(await page.getByLabel('Caption', { exact: true }).inputValue(), 'A photo'); // the default
    await page.getByLabel('Photo').setInputFiles({
      name: 'square.png',
      mimeType: 'image/png',
      buffer: png([40, 120, 220], 16, 16),
    });
    await page
      .locator('.upload-status', { hasText: /^Uploaded square\.png \(image\/png, \d+ B\)$/ })
      .waitFor();
    assert.match(await page.getByLabel('Or a file id or URL').inputValue(), /^file_/);
    assert.equal(await page.locator('.file-field progress').evaluate((bar: any) => bar.value), 1); // filled, then hidden
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const img = page.locator('#outputs .item img');
    await img.waitFor();
    // Polled from here: a string predicate of waitForFunction is eval'd in the page, which its CSP refuses.
    await waitFor(
      async () => (await img.evaluate((el: any) => el.naturalWidth as number)) === 16 || undefined,
      { what: 'the image output to load at its 16 px width' },
    );
    assert.match(
      (await img.getAttribute('src'))!,
      new RegExp(`^${svc.url}/files/file_\\w+/content\\?`),
    );
    assert.equal(await page.locator('#outputs pre.text').textContent(), 'A photo');
    await shot('desktop');
  });

  it('cancels a running run with the Cancel button', async () => {
    await chooseWorkflow(page, 'slow-answer');
    await page.getByLabel('Topic').fill('slow:30000 to be cancelled');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const cancel = page.getByRole('button', { name: 'Cancel run' });
    await page.locator('#run-status .badge', { hasText: 'running' }).waitFor();
    await cancel.click();
    await page.locator('#run-status .badge', { hasText: 'cancelled' }).waitFor({ timeout: 30_000 });
    assert.ok(await cancel.isDisabled());
    await page.locator('#outputs .alert', { hasText: 'The run was cancelled.' }).waitFor();
    const runId = (await page.locator('#run-id').textContent())!;
    assert.equal(
      (await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key })).body.status,
      'cancelled',
    );
    await shot('cancelled');
  });

  it('resumes a dropped stream with Last-Event-ID and still shows the answer', async () => {
    const resumes: string[] = [];
    const watch = (req: http.IncomingMessage) => {
      if (req.url?.endsWith('/stream')) resumes.push(String(req.headers['last-event-id']));
    };
    cutNextStartAfterFirstEvent();
    svc.api.server.on('request', watch);
    try {
      await page.getByLabel('Topic').fill('slow:2500 resumed');
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await page
        .locator('#outputs pre.text', { hasText: 'echo: slow:2500 resumed' })
        .waitFor({ timeout: 30_000 })
        .catch(async (err) =>
          assert.fail(
            `${err.message}\ntimeline: ${await page.locator('#timeline').textContent()}\nerror: ${await page.locator('#form-error').textContent()}\nstreams: ${resumes}`,
          ),
        );
    } finally {
      svc.api.server.off('request', watch);
    }
    assert.equal(resumes[0], '0', `resumed after the created event: ${resumes}`);
    const events = await page.locator('#timeline li .what').allTextContents();
    assert.ok(
      events.some((e) => /^connection lost: reconnecting \(attempt 1, Last-Event-ID 0\)$/.test(e)),
      events.join(' | '),
    );
    assert.equal(
      events.filter((e) => e.startsWith('created')).length,
      1,
      'the start was not repeated',
    );
    assert.equal(events.at(-1), 'completed');
  });

  it('takes a 204 on resume as the end of the run, and shows its record', async () => {
    // The resume rule "a Last-Event-ID at or after the terminal event answers 204" played by the
    // browser's router: the stream is cut after its first event, and the reconnect answered 204
    // once the run has ended.
    cutNextStartAfterFirstEvent();
    const resumed: string[] = [];
    await page.route('**/api/v1/runs/*/stream*', async (route) => {
      resumed.push(route.request().headers()['last-event-id']);
      const runId = /runs\/(run_\w+)\/stream/.exec(route.request().url())![1];
      await waitForRun(svc.url, key, runId);
      await route.fulfill({ status: 204 });
    });
    try {
      await page.getByLabel('Topic').fill('slow:1000 over while away');
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await page
        .locator('#outputs pre.text', { hasText: 'echo: slow:1000 over while away' })
        .waitFor({ timeout: 30_000 });
    } finally {
      await page.unroute('**/api/v1/runs/*/stream*');
    }
    assert.deepEqual(resumed, ['0']);
    assert.equal(await status().textContent(), 'completed');
  });

  it('builds number, boolean and JSON fields, and refuses invalid JSON before sending', async () => {
    await chooseWorkflow(page, 'typed');
    assert.equal(await page.getByLabel('Count').getAttribute('type'), 'number');
    assert.equal(await page.getByLabel('Loud').getAttribute('type'), 'checkbox');
    await page.getByLabel('Title').fill('Deck');
    await page.getByLabel('Count').fill('3');
    await page.getByLabel('Loud').check();
    await page.getByLabel('Options').fill('{"a": ');
    const before = (await call(svc.url, 'GET', '/api/v1/runs?limit=1', { key })).body.data[0].id;
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.locator('.field-error', { hasText: /^Options is not valid JSON/ }).waitFor();
    assert.equal(await page.getByLabel('Options').getAttribute('aria-invalid'), 'true');
    assert.equal(
      (await call(svc.url, 'GET', '/api/v1/runs?limit=1', { key })).body.data[0].id,
      before,
      'nothing was sent',
    );
    await page.getByLabel('Options').fill('{"a": [1, true]}');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.locator('#outputs pre.text', { hasText: 'Deck 3 true' }).waitFor();
    assert.match(
      (await page.locator('#code').textContent())!,
      /"inputs":\{"title":"Deck","count":3,"loud":true,"options":\{"a":\[1,true\]\}\}/,
    );
  });

  it('reopens a finished run from the recent runs list', async () => {
    await page.getByRole('button', { name: 'Refresh' }).click();
    const open = page.getByRole('button', { name: `Open run ${helloRunId}` });
    await open.click();
    await page.locator('#outputs pre.text', { hasText: 'Hello, Ada!' }).waitFor();
    assert.equal(await page.locator('#run-id').textContent(), helloRunId);
    assert.equal(
      await workflowPicker(page).inputValue(),
      (await call(svc.url, 'GET', '/api/v1/workflows/hello', { key })).body.workflow_id,
    );
    const events = await page.locator('#timeline li .what').allTextContents();
    assert.equal(events[0], 'attached after event 0 (run completed)');
    assert.equal(events.at(-1), 'completed');
  });

  it('shows a run of many items a page at a time and its newest events, never reading the run whole (before: every item and event on the page)', async () => {
    const ROWS = 620;
    const rows = Array.from({ length: ROWS }, (_, i) => i);
    const started = await call(svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'many-rows', inputs: { rows } },
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const runId: string = started.body.run_id;
    await waitForRun(svc.url, key, runId);
    const runReads: string[] = [];
    const onRequest = (req: { url(): string }) => {
      const url = new URL(req.url());
      if (url.pathname === `/api/v1/runs/${runId}`) runReads.push(url.search);
    };
    page.on('request', onRequest);
    try {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.getByRole('button', { name: `Open run ${runId}` }).click();
      const items = page.locator('#outputs .item');
      await page.locator('#outputs .item pre.text', { hasText: 'row 49' }).waitFor();
      assert.equal(await items.count(), 50, 'the first page of the output');
      assert.ok(runReads.length > 0, 'the run is read');
      for (const query of runReads)
        assert.equal(query, '?include_output=false', 'the run is read without its items');
      await page.getByRole('button', { name: 'Show more items' }).click();
      await page.locator('#outputs .item pre.text', { hasText: 'row 99' }).waitFor();
      assert.equal(await items.count(), 100);
      assert.equal(await items.nth(99).locator('.item-index').textContent(), '#100');
      // Two events a row, and the run's own: the newest 500 are shown, the rest counted.
      const shown = await page.locator('#timeline li').allTextContents();
      assert.equal(shown.length, 501);
      const dropped = Number(/^(\d+) earlier events not shown$/.exec(shown[0])?.[1]);
      assert.ok(dropped >= 2 * ROWS - 500, shown[0]);
      assert.match(shown.at(-1)!, /completed$/);
    } finally {
      page.off('request', onRequest);
    }
  });

  it('forgets the key and what it showed: the run on screen, its events and its outputs', async () => {
    assert.ok((await page.locator('#outputs > *').count()) > 0, 'a run is on screen');
    await page.getByRole('button', { name: 'Forget' }).click();
    assert.equal(await page.locator('#outputs > *').count(), 0);
    assert.equal(await page.locator('#timeline li').count(), 0);
    assert.equal(await page.locator('#run-id').textContent(), '');
    assert.equal(await status().textContent(), 'idle');
    // The tests after this one use the key again.
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Use key' }).click();
    await workflowPicker(page).locator('option').first().waitFor({ state: 'attached' });
  });

  it('starts a run with metadata and shows it (D37), then deletes the run (D39)', async () => {
    await chooseWorkflow(page, 'hello');
    await page.getByLabel('Name').fill('Meta');
    await page.getByLabel('Metadata').fill('not json');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.locator('#metadata-error', { hasText: 'must be JSON' }).waitFor();
    await page.getByLabel('Metadata').fill('{"order_id": "ord_42", "team.name": "blue"}');
    assert.match(
      (await page.locator('#code').textContent())!,
      /"metadata":\{"order_id":"ord_42","team.name":"blue"\}/,
      'the code shows the metadata',
    );
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page
      .locator('#run-metadata', { hasText: 'Metadata: order_id=ord_42 · team.name=blue' })
      .waitFor();
    const runId = (await page.locator('#run-id').textContent())!;
    assert.deepEqual((await waitForRun(svc.url, key, runId)).metadata, {
      order_id: 'ord_42',
      'team.name': 'blue',
    });
    await page.getByLabel('Metadata').fill('');

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete run' }).click();
    await page.locator('#run-status .badge', { hasText: 'deleted' }).waitFor();
    assert.ok(await page.getByRole('button', { name: 'Delete run' }).isDisabled());
    assert.equal((await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key })).status, 404);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.getByRole('button', { name: `Open run ${helloRunId}` }).waitFor();
    assert.equal(await page.getByRole('button', { name: `Open run ${runId}` }).count(), 0);
  });

  it('re-runs a finished run from its buttons: failed items (refused: none failed) and all (D38)', async () => {
    await chooseWorkflow(page, 'hello');
    await page.getByLabel('Name').fill('Again');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.locator('#run-status .badge', { hasText: 'completed' }).waitFor();
    const parentId = (await page.locator('#run-id').textContent())!;
    await page.getByRole('button', { name: 'Re-run failed' }).click();
    await page.locator('#form-error', { hasText: 'nothing to re-run' }).waitFor();
    // The browser logs the refused re-run (the 400 we asked for): the one console error expected here.
    const refused = await waitFor(async () => {
      const at = problems.findIndex((p) => p.includes('status of 400'));
      return at >= 0 ? at : undefined;
    });
    problems.splice(refused, 1);
    await page.getByRole('button', { name: 'Re-run all' }).click();
    await page.locator('#run-metadata', { hasText: `Re-run of ${parentId}` }).waitFor();
    const childId = (await page.locator('#run-id').textContent())!;
    assert.notEqual(childId, parentId);
    assert.equal((await waitForRun(svc.url, key, childId)).parent_run_id, parentId);
  });

  it('starts a run with a cost cap and a timeout, shows a refusal beside its field and the run’s usage (D36)', async () => {
    await chooseWorkflow(page, 'slow-answer');
    await page.getByLabel('Topic').fill('usage please');
    await page.getByLabel('Timeout (seconds)').fill('0');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.locator('#timeout-seconds-error', { hasText: 'must be ≥ 1' }).waitFor();
    assert.equal(await page.getByLabel('Timeout (seconds)').getAttribute('aria-invalid'), 'true');
    // The browser logs the refused start (a 400 we asked for): the one console error expected here.
    const refused = await waitFor(async () => {
      const at = problems.findIndex((p) => p.includes('status of 400'));
      return at >= 0 ? at : undefined;
    });
    problems.splice(refused, 1);
    await page.getByLabel('Timeout (seconds)').fill('60');
    await page.getByLabel('Cost cap (USD)').fill('0.5');
    assert.match(
      (await page.locator('#code').textContent())!,
      /"max_cost":0\.5,"timeout_seconds":60/,
      'the code shows the controls',
    );
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    // The fake reports 100 prompt and 50 completion tokens for its one call.
    await page
      .locator('#run-usage', {
        hasText: 'Usage: 1 provider calls, 100 input / 50 output tokens · ask: 1 calls',
      })
      .waitFor();
    await page.getByLabel('Timeout (seconds)').fill('');
    await page.getByLabel('Cost cap (USD)').fill('');
  });

  it('works at 375 px wide, from the keyboard, with a label on every control', async () => {
    const phone = await openPage({ width: 375, height: 812 });
    try {
      await chooseWorkflow(phone, 'hello');
      // In the page (the test's tsconfig has no DOM types): every control is named by a label, aria-label or its text.
      const unlabelled =
        await phone.evaluate(`[...document.querySelectorAll('input, select, textarea, button')]
        .filter((c) => !c.labels?.length && !c.getAttribute('aria-label') && !c.textContent.trim())
        .map((c) => c.outerHTML)`);
      assert.deepEqual(unlabelled, []);
      await phone.getByLabel('Name').focus();
      await phone.keyboard.type('Keyboard');
      await phone.keyboard.press('Tab'); // to the metadata field (D37)
      assert.equal(await phone.evaluate('document.activeElement.id'), 'metadata');
      await phone.keyboard.press('Tab'); // to the cost cap and the timeout (D36)
      assert.equal(await phone.evaluate('document.activeElement.id'), 'max-cost');
      await phone.keyboard.press('Tab');
      assert.equal(await phone.evaluate('document.activeElement.id'), 'timeout-seconds');
      await phone.keyboard.press('Tab'); // to the priority (D36)
      assert.equal(await phone.evaluate('document.activeElement.id'), 'priority');
      await phone.keyboard.press('Tab'); // to Run
      assert.equal(await phone.evaluate('document.activeElement.id'), 'run');
      await phone.keyboard.press('Enter');
      await phone.locator('#outputs pre.text', { hasText: 'Hello, Keyboard!' }).waitFor();
      assert.ok(
        await phone.evaluate('document.documentElement.scrollWidth <= 375'),
        'no horizontal scrolling at 375 px',
      );
      await shot('mobile', phone);
    } finally {
      await phone.close();
    }
    assert.deepEqual(problems, []);
  });
});
