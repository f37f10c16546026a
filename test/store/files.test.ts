/**
 * Files (store/files.ts) after an API process died in the middle of writing or deleting one
 * (test/support/api-crash.ts): an upload's chunks with no file are removed by the hourly
 * retention once no write can still be under way (not after RETENTION_DAYS), and a delete cut
 * short leaves the file for a repeated DELETE to finish (before, it left chunks no file names,
 * counted by no quota for 30 days, and the repeated DELETE answered 404).
 */
import assert from 'node:assert/strict';
import { createRetentionActivity } from '../../activities/retention';
import { filesCollection } from '../../store/files';
import { killApiAfter } from '../support/api-crash';
import { hasStringElement } from '../support/mongo-proxy';
import { call, waitFor } from '../support/http';
import { useService } from '../support/use-service';

/** Thirteen GridFS chunks of 255 KiB. */
const BIG = 3 * 1024 * 1024;
const CHUNKS = Math.ceil(BIG / (255 * 1024));

describe('files after a crash mid-write (store/files.ts)', function () {
  this.timeout(120_000);
  const ctx = useService({ worker: false });
  const db = () => ctx.svc.store.db;
  const chunks = () => db().collection<{ files_id: string }>('files.chunks');

  /** The ids of chunks whose files document does not exist. */
  async function orphanIds(): Promise<Set<string>> {
    const ids = (await chunks().distinct('files_id', {})) as string[];
    const alive = await filesCollection(db())
      .find({ _id: { $in: ids } }, { projection: { _id: 1 } })
      .toArray();
    const kept = new Set(alive.map((f) => f._id));
    return new Set(ids.filter((id) => !kept.has(id)));
  }

  const upload = (url: string, key: string, bytes: Buffer) =>
    fetch(`${url}/api/v1/files?name=big.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
      body: bytes,
    });

  /**
   * The bytes a download got, or why it failed: a status, or the connection cut mid-body. A body
   * that stops short of its Content-Length on an open connection leaves the client waiting: that
   * is no failure it can act on, so it throws.
   */
  const download = (url: string, headers: Record<string, string> = {}) =>
    fetch(url, { headers, signal: AbortSignal.timeout(10_000) })
      .then(async (r) => {
        if (r.status !== 200 && r.status !== 206) return `status ${r.status}`;
        return (await r.arrayBuffer()).byteLength;
      })
      .catch((err: Error) => {
        if (err.name === 'TimeoutError') throw new Error('the download stalled: no end, no error');
        return err.message;
      });

  /** The retention activity as the worker runs it, on a clock `aheadMs` in the future. */
  const retention = (aheadMs: number) =>
    createRetentionActivity({
      collections: ctx.svc.store.collections,
      db: db(),
      config: ctx.svc.config,
      now: () => Date.now() + aheadMs,
    })();

  it('an upload killed mid-stream: its chunks go at the retention an hour later, not while the write could be under way', async () => {
    const { key } = await ctx.newAccount(1);
    const whole = await upload(ctx.svc.url, key, Buffer.alloc(BIG, 'w'));
    assert.equal(whole.status, 201);
    const kept = ((await whole.json()) as { id: string; url: string }).url;
    const before = await orphanIds();

    let inserts = 0;
    await killApiAfter(
      ctx.svc.config,
      {},
      (m) => hasStringElement(m, 'insert', 'files.chunks') && ++inserts === 3,
      (url) => upload(url, key, Buffer.alloc(BIG, 'x')),
    );
    const left = [...(await orphanIds())].filter((id) => !before.has(id));
    assert.equal(left.length, 1, 'the killed upload left chunks with no file');
    const leftChunks = () => chunks().countDocuments({ files_id: left[0] });
    assert.ok((await leftChunks()) >= 2);

    // Now: the write could still be under way for all the sweep can tell.
    await retention(0);
    assert.ok((await leftChunks()) >= 2, 'a write that may be under way keeps its chunks');

    // An hour on, long past the longest a write may take (the API's 5 min request timeout, and slack).
    await retention(3_600_000);
    assert.equal(await leftChunks(), 0, 'the chunks of the killed upload went');

    // The whole upload is untouched: every one of its bytes is served.
    const served = await fetch(kept);
    assert.equal(served.status, 200);
    assert.equal((await served.arrayBuffer()).byteLength, BIG);
  });

  it('a file missing its last chunks fails to download, never ends as if whole', async () => {
    const { key } = await ctx.newAccount(1);
    const res = await upload(ctx.svc.url, key, Buffer.alloc(BIG, 'z'));
    const file = (await res.json()) as { id: string; url: string };
    // GridFS reports a gap between chunks, but ended a cursor that ran out early as a whole file.
    await chunks().deleteMany({ files_id: file.id, n: { $gte: CHUNKS - 2 } } as object);
    const whole = await download(file.url);
    assert.equal(typeof whole, 'string', `the download failed, it served ${whole} bytes`);
    const range = await download(file.url, { range: `bytes=${BIG - 10}-` });
    assert.equal(typeof range, 'string', `a range in the missing part failed, it served ${range}`);
  });

  it('a file DELETE killed half-way: the file is still there, a download of it fails, and a repeated DELETE finishes it', async () => {
    const { key } = await ctx.newAccount(1);
    const res = await upload(ctx.svc.url, key, Buffer.alloc(BIG, 'y'));
    const file = (await res.json()) as { id: string };
    assert.equal(await chunks().countDocuments({ files_id: file.id }), CHUNKS);

    // Killed right after the first of its two deletes (the chunks', or the files document's).
    await killApiAfter(
      ctx.svc.config,
      {},
      (m) =>
        (hasStringElement(m, 'delete', 'files.chunks') ||
          hasStringElement(m, 'delete', 'files.files')) &&
        m.includes(file.id),
      (url) => call(url, 'DELETE', `/api/v1/files/${file.id}`, { key }),
    );

    // The delete that went through reached the store before the kill; it may still be applying.
    await waitFor(
      async () =>
        (await chunks().countDocuments({ files_id: file.id })) < CHUNKS ||
        (await filesCollection(db()).countDocuments({ _id: file.id })) === 0
          ? true
          : undefined,
      { what: 'the first delete applied' },
    );
    // What is left is the file, no longer whole: a download of it must not end as if complete.
    const view = await call(ctx.svc.url, 'GET', `/api/v1/files/${file.id}`, { key });
    assert.equal(view.status, 200, 'the file is still there to be deleted');
    const served = await download(view.body.url);
    assert.equal(typeof served, 'string', `a download of it failed, it served ${served} bytes`);

    const again = await call(ctx.svc.url, 'DELETE', `/api/v1/files/${file.id}`, { key });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(again.body, { id: file.id, object: 'file', deleted: true });
    assert.equal(await chunks().countDocuments({ files_id: file.id }), 0);
    assert.equal(await filesCollection(db()).countDocuments({ _id: file.id }), 0);
    const account = await call(ctx.svc.url, 'GET', '/api/v1/account', { key });
    assert.equal(account.body.file_storage.used_bytes, 0);
  });
});
