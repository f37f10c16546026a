// The typed client — start, get, cancel, wait(), files, and stream() surviving a forced disconnect.
import assert from 'node:assert/strict';
import http from 'node:http';
import { openAsBlob } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { parse } from 'csv-parse/sync';
import { WrsApiError, WrsClient, type StreamEvent } from '../../clients/typescript';
import { call } from '../support/http';
import { batchWorkflow } from '../support/fixtures';
import { storedLog } from '../support/runs';
import { useService } from '../support/use-service';

const batch = batchWorkflow('batch', ['slow:300 a', 'slow:900 b', 'slow:1500 c']);

/** A pass-through proxy that can cut every open connection, as a flaky network would. */
async function startCuttingProxy(target: string): Promise<{
  url: string;
  cut(): void;
  close(): Promise<void>;
  posts: number;
  outage(gets: number): void;
  refused: number;
}> {
  const sockets = new Set<import('node:net').Socket>();
  const state = { posts: 0, outageGets: 0, refused: 0 };
  const server = http.createServer((req, res) => {
    if (req.method === 'POST') state.posts++;
    if (req.method === 'GET' && state.outageGets > 0) {
      // What the API answers while Temporal or MongoDB is down (docs/outages.md).
      state.outageGets--;
      state.refused++;
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
      return res.end(
        JSON.stringify({
          error: {
            type: 'server_error',
            code: 'service_unavailable',
            message: 'Temporal does not answer.',
          },
        }),
      );
    }
    const upstream = http.request(
      target + req.url,
      { method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode!, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut: () => sockets.forEach((s) => s.destroy()),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
    outage: (gets) => (state.outageGets = gets),
    get posts() {
      return state.posts;
    },
    get refused() {
      return state.refused;
    },
  };
}

describe('typed client', function () {
  this.timeout(60_000);
  const ctx = useService({ fakeOpenAI: true });

  before(async () => {
    assert.equal(
      (await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key: ctx.key, body: batch })).status,
      201,
    );
  });

  it('starts, reads, waits for the end, and raises API errors as WrsApiError', async () => {
    const client = new WrsClient({ baseUrl: ctx.svc.url, apiKey: ctx.key });
    const started = await client.start({ workflowId: 'batch' });
    assert.equal(started.status, 'pending');
    const run = await client.wait(started.run_id);
    assert.equal(run.status, 'completed');
    assert.equal(run.output!.answers.length, 3);
    assert.deepEqual(await client.get(started.run_id), run);
    assert.deepEqual(await client.get(started.run_id, { includeOutput: false }), {
      ...run,
      output: null,
    });
    // D31: the same items, a page of one at a time through the async iterator.
    const items = [];
    for await (const item of client.items(started.run_id, 'answers', { pageSize: 1 }))
      items.push(item);
    assert.deepEqual(items, run.output!.answers);
    // D35: the results file, JSON Lines, parsed line by line.
    const exported = [];
    for await (const item of client.exportItems(started.run_id, 'answers')) exported.push(item);
    assert.deepEqual(exported, run.output!.answers);
    // The same file as CSV, its bytes as they came.
    const chunks = [];
    for await (const chunk of client.exportCsv(started.run_id, 'answers')) chunks.push(chunk);
    const [header, ...records] = parse(Buffer.concat(chunks)) as string[][];
    assert.deepEqual(header, ['item_index', 'id', 'status', 'output', 'error']);
    assert.deepEqual(
      records.map((r) => r[1]),
      run.output!.answers.map((item) => item.id),
    );
    await assert.rejects(
      client.cancel(started.run_id),
      (err: WrsApiError) => err.status === 409 && err.code === 'run_not_cancellable',
    );
    await assert.rejects(
      client.start({ workflowId: 'nope' }),
      (err: WrsApiError) => err.status === 404 && err.code === 'published_workflow_not_found',
    );
  });

  it('uploads (bytes, a Blob, a file from disk), reads, lists and deletes files (D19)', async () => {
    const client = new WrsClient({ baseUrl: ctx.svc.url, apiKey: ctx.key });
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wrs-client-'));
    const onDisk = path.join(dir, 'rows.jsonl');
    await fs.writeFile(onDisk, '{"q":1}\n{"q":2}\n');
    const fromDisk = await client.upload(await openAsBlob(onDisk), { name: 'rows.jsonl' });
    const bytes = await client.upload(new TextEncoder().encode('hello'), { name: 'hello.txt' });
    const blob = await client.upload(new File(['a file'], 'picked.txt'));
    assert.deepEqual(
      [fromDisk.size, bytes.size, blob.name, blob.mime_type],
      [16, 5, 'picked.txt', 'text/plain'],
    );
    assert.equal(await (await fetch(bytes.url)).text(), 'hello');
    assert.equal((await client.getFile(fromDisk.id)).name, 'rows.jsonl');
    const page = await client.listFiles({ limit: 2 });
    assert.deepEqual(
      page.data.map((f) => f.id),
      [blob.id, bytes.id],
    );
    assert.equal(page.has_more, true);
    assert.deepEqual(await client.deleteFile(bytes.id), {
      id: bytes.id,
      object: 'file',
      deleted: true,
    });
    await assert.rejects(
      client.getFile(bytes.id),
      (err: WrsApiError) => err.status === 404 && err.code === 'not_found',
    );
    await fs.rm(dir, { recursive: true });
  });

  it('reads its account: credit and storage (D41)', async () => {
    const own = await ctx.newAccount(4);
    const client = new WrsClient({ baseUrl: ctx.svc.url, apiKey: own.key });
    await client.upload(new TextEncoder().encode('hello'), { name: 'hello.txt' });
    const account = await client.account();
    assert.equal(account.id, own.accountId);
    assert.deepEqual(account.credits, { balance_usd: 4, held_usd: 0, available_usd: 4 });
    assert.equal(account.file_storage.used_bytes, 5);
  });

  it('starts with a priority (D36); one that is not low, normal or high is 400 naming the field', async () => {
    const client = new WrsClient({ baseUrl: ctx.svc.url, apiKey: ctx.key });
    const started = await client.start({ workflowId: 'batch', priority: 'high' });
    assert.equal((await client.wait(started.run_id)).status, 'completed');
    await assert.rejects(
      client.start({ workflowId: 'batch', priority: 'urgent' as 'high' }),
      (err: WrsApiError) => err.status === 400 && err.param === 'priority',
    );
  });

  it('starts with metadata, lists by metadata and time (D37), re-runs (D38) and deletes a run (D39)', async () => {
    const client = new WrsClient({ baseUrl: ctx.svc.url, apiKey: ctx.key });
    const since = new Date();
    const order = `ord_${Date.now()}`;
    const started = await client.start({
      workflowId: 'batch',
      metadata: { order, 'src.app': 'ts' },
    });
    const other = await client.start({ workflowId: 'batch', metadata: { order: 'other' } });
    assert.deepEqual((await client.wait(started.run_id)).metadata, { order, 'src.app': 'ts' });
    await client.wait(other.run_id);
    const page = await client.list({
      metadata: { order },
      created_after: since,
      workflow_id: 'batch',
    });
    assert.deepEqual(
      page.data.map((r) => r.id),
      [started.run_id],
    );
    assert.equal(page.data[0].parent_run_id, null);
    const all = [];
    for await (const run of client.runs({ created_after: since, pageSize: 1 })) all.push(run.id);
    assert.deepEqual(all, [other.run_id, started.run_id]);
    await assert.rejects(
      client.start({ workflowId: 'batch', metadata: { 'no spaces': 'x' } }),
      (err: WrsApiError) => err.status === 400 && err.code === 'invalid_metadata',
    );
    // D38: a re-run names its parent and keeps its metadata; nothing failed, so no re-run of failed items.
    const again = await client.rerun(started.run_id, { items: 'all' });
    const rerun = await client.wait(again.run_id);
    assert.equal(rerun.parent_run_id, started.run_id);
    assert.deepEqual(rerun.metadata, { order, 'src.app': 'ts' });
    await assert.rejects(
      client.rerun(started.run_id, { items: 'failed' }),
      (err: WrsApiError) => err.status === 400 && err.code === 'nothing_to_rerun',
    );
    assert.deepEqual(await client.delete(started.run_id), {
      id: started.run_id,
      object: 'run',
      deleted: true,
    });
    await assert.rejects(client.get(started.run_id), (err: WrsApiError) => err.status === 404);
    await assert.rejects(client.delete(started.run_id), (err: WrsApiError) => err.status === 404);
  });

  it('starts with max_cost and timeout_seconds and reads the run’s usage (D36)', async () => {
    const client = new WrsClient({ baseUrl: ctx.svc.url, apiKey: ctx.key });
    const started = await client.start({ workflowId: 'batch', max_cost: 1, timeout_seconds: 60 });
    const run = await client.wait(started.run_id);
    assert.equal(run.status, 'completed');
    // The fake reports 100 prompt and 50 completion tokens a call.
    assert.equal(run.usage.provider_calls, 3);
    assert.equal(run.usage.input_tokens, 300);
    assert.equal(run.usage.output_tokens, 150);
    assert.equal(run.usage.by_node.ask.items_completed, 3);
    await assert.rejects(
      client.start({ workflowId: 'batch', timeout_seconds: 0 }),
      (err: WrsApiError) =>
        err.status === 400 && err.param === 'timeout_seconds' && err.code === undefined,
    );
  });

  it('stream() survives a forced disconnect: reconnects with Last-Event-ID, never repeats the POST, yields each event once', async () => {
    const proxy = await startCuttingProxy(ctx.svc.url);
    try {
      const client = new WrsClient({ baseUrl: proxy.url, apiKey: ctx.key });
      const seen: StreamEvent[] = [];
      let cut = false;
      for await (const event of client.stream({ workflowId: 'batch' }, { reconnectDelayMs: 100 })) {
        seen.push(event);
        if (!cut && event.type === 'response.output_item.done') {
          cut = true;
          proxy.cut();
        }
      }
      assert.ok(cut);
      assert.equal(proxy.posts, 1);
      assert.equal(seen.at(-1)!.type, 'response.completed');
      assert.deepEqual(
        seen.map((e) => e.sequence_number),
        seen.map((_, i) => i),
      );
      const runId = (seen[0] as Extract<StreamEvent, { type: 'response.created' }>).response.run_id;
      assert.deepEqual(seen, await storedLog(ctx.svc.store.collections, runId));
    } finally {
      await proxy.close();
    }
  });

  it('waits out 503 answers (an outage of Temporal or MongoDB) as Retry-After says, in wait() and in a stream reconnect', async () => {
    const proxy = await startCuttingProxy(ctx.svc.url);
    try {
      const client = new WrsClient({ baseUrl: proxy.url, apiKey: ctx.key });
      const started = await client.start({ workflowId: 'batch' });
      proxy.outage(2);
      assert.equal((await client.wait(started.run_id)).status, 'completed');
      assert.equal(proxy.refused, 2);

      const seen: StreamEvent[] = [];
      for await (const event of client.stream(
        { workflowId: 'batch' },
        { reconnectDelayMs: 100, maxReconnects: 1 },
      )) {
        seen.push(event);
        if (seen.length === 2) {
          proxy.outage(2); // more refusals than maxReconnects: a 503 is waited out, not counted as a lost connection
          proxy.cut();
        }
      }
      assert.equal(proxy.refused, 4);
      assert.equal(proxy.posts, 2);
      assert.equal(seen.at(-1)!.type, 'response.completed');
      assert.deepEqual(
        seen.map((e) => e.sequence_number),
        seen.map((_, i) => i),
      );
    } finally {
      await proxy.close();
    }
  });
});
