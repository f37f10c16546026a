/**
 * The per-key cap on downloads (D35, D40) on the real stack: a key with DOWNLOAD_MAX_PER_KEY
 * downloads in progress gets 429 `too_many_downloads` with `Retry-After` for one more, JSON Lines,
 * CSV or a finished big run read whole, while its JSON pages, a small run's record, and another
 * key's downloads, go on; a download that ends gives its slot back.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { expectError } from '../../support/api-assert';
import { greetingWorkflow, publish, textRowsWorkflow, waitForRun } from '../../support/fixtures';
import { uploadFile } from '../../support/files';
import { call, waitFor, type ApiResponse } from '../../support/http';
import { startRun } from '../../support/runs';
import { useService } from '../../support/use-service';

/** Each of a file's rows ten times over: ~3 KB items, ~30 MB of results file, more than a socket's buffers hold. */
const bigItems = textRowsWorkflow('big-items', '{{row}}'.repeat(10), {
  concurrency: 16,
  input_type: 'file',
});

interface HeldDownload {
  status: number;
  /** Ends the download (the client goes away). */
  stop(): void;
}

describe('results-file downloads per key (D35, D40)', function () {
  this.timeout(180_000);
  const ctx = useService({ env: { DOWNLOAD_MAX_PER_KEY: '2' } });
  const held: HeldDownload[] = [];
  let runId: string;

  before(async () => {
    await publish(ctx.svc.url, ctx.key, bigItems);
    const rows = Array.from({ length: 10_000 }, (_, i) => JSON.stringify(`${i} `.padEnd(300, '.')));
    const fileId = await uploadFile(ctx.svc.url, ctx.key, 'rows.jsonl', rows.join('\n'));
    runId = await startRun(ctx.svc.url, ctx.key, 'big-items', { rows: fileId });
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 150_000);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
  });
  afterEach(() => {
    for (const download of held.splice(0)) download.stop();
  });

  /** A download whose client reads its headers and then nothing: it stays in progress. */
  function holdDownload(
    key = ctx.key,
    accept = 'application/x-ndjson',
    path = `/api/v1/runs/${runId}/outputs/out`,
  ): Promise<HeldDownload> {
    return new Promise((resolve, reject) => {
      const req = http.get(
        `${ctx.svc.url}${path}`,
        { headers: { authorization: `Bearer ${key}`, accept }, agent: false },
        (res) => {
          res.pause();
          const download = { status: res.statusCode ?? 0, stop: () => req.destroy() };
          held.push(download);
          resolve(download);
        },
      );
      req.on('error', (err) => (held.length > 0 ? undefined : reject(err)));
    });
  }

  const download = (key: string, accept: string): Promise<ApiResponse> =>
    call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/out`, { key, headers: { accept } });

  function expectCapped(res: ApiResponse): void {
    expectError(res, { status: 429, type: 'rate_limit_error', code: 'too_many_downloads' });
    assert.equal(res.headers.get('retry-after'), '5');
  }

  it('a key with DOWNLOAD_MAX_PER_KEY downloads in progress is refused one more, JSON Lines or CSV; pages and other keys go on', async () => {
    assert.equal((await holdDownload()).status, 200);
    assert.equal((await holdDownload(ctx.key, 'text/csv')).status, 200);

    expectCapped(await download(ctx.key, 'application/x-ndjson'));
    expectCapped(await download(ctx.key, 'text/csv'));
    // The JSON pages are not downloads.
    const page = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/out?limit=5`, {
      key: ctx.key,
    });
    assert.equal(page.status, 200, JSON.stringify(page.body).slice(0, 300));
    assert.equal(page.body.data.length, 5);
    // Another key has slots of its own: another account's, so its answer is the 404 that comes
    // after its slot is taken, not a 429.
    const other = await ctx.newAccount();
    assert.equal((await download(other.key, 'application/x-ndjson')).status, 404);
  });

  it('a finished big run read whole (its GET, D31) is a download too; a small run’s record is not', async () => {
    const record = `/api/v1/runs/${runId}`;
    const first = await holdDownload(ctx.key, 'application/json', record);
    assert.equal(first.status, 200);
    assert.equal((await holdDownload()).status, 200);
    expectCapped(await call(ctx.svc.url, 'GET', record, { key: ctx.key }));
    expectCapped(await download(ctx.key, 'application/x-ndjson'));

    await publish(ctx.svc.url, ctx.key, greetingWorkflow('small'));
    const small = await startRun(ctx.svc.url, ctx.key, 'small', { name: 'Ada' });
    // Read while the key holds both slots.
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, small)).status, 'completed');
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/runs/${small}`, { key: ctx.key })).status,
      200,
    );

    first.stop();
    const whole = await waitFor(
      async () => {
        const res = await call(ctx.svc.url, 'GET', record, { key: ctx.key });
        return res.status === 200 ? res : undefined;
      },
      { what: 'the slot of the GET that ended' },
    );
    assert.equal(whole.body.output.out.length, 10_000);
  });

  it('a download that ends gives its slot back', async () => {
    const first = await holdDownload();
    await holdDownload();
    expectCapped(await download(ctx.key, 'application/x-ndjson'));
    first.stop();
    const next = await waitFor(
      async () => {
        const res = await holdDownload();
        if (res.status === 200) return res;
        res.stop();
        return undefined;
      },
      { what: 'a slot given back by the download that ended' },
    );
    assert.equal(next.status, 200);
  });

  it('counts a file over 8 MiB read through its link against the link’s key; smaller files are not counted', async () => {
    const link = async (bytes: number) => {
      const up = await fetch(`${ctx.svc.url}/api/v1/files?name=big.txt`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/octet-stream' },
        body: Buffer.alloc(bytes, 'a'),
      });
      const body = (await up.json()) as { url: string };
      assert.equal(up.status, 201, JSON.stringify(body));
      const url = new URL(body.url);
      return url.pathname + url.search;
    };
    const big = await link(9 * 1024 * 1024);
    assert.equal((await holdDownload(ctx.key, '*/*', big)).status, 200);
    assert.equal((await holdDownload(ctx.key, '*/*', big)).status, 200);
    expectCapped(await call(ctx.svc.url, 'GET', big));
    // The key's results files share the cap: a third download of any kind waits.
    expectCapped(await download(ctx.key, 'application/x-ndjson'));
    const small = await fetch(ctx.svc.url + (await link(1024)));
    assert.equal(small.status, 200);
    assert.equal((await small.arrayBuffer()).byteLength, 1024);
  });
});
