// D39: deleting a run. Every read of it is 404 afterwards, nothing of its inputs and outputs stays
// in the store, and its Temporal history, decoded through the codec server, no longer yields them.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { publish, waitForRun } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { startRun } from '../../support/runs';
import { showHistory } from '../../support/temporal-cli';
import { useService } from '../../support/use-service';
import { startWebhookReceiver, type WebhookReceiver } from '../../fakes/webhook-receiver';
import { webhookWorkflowId } from '../../../workflows/definitions';
import { deriveId } from '../../../store/ids';
import { filesCollection } from '../../../store/files';
import { eraseRun } from '../../../store/erase-run';
import { findRunRecord, insertRun } from '../../../store/runs';
import { generateId } from '../../../store/ids';
import { pendingRun } from '../../support/store';
import { PATCHES } from '../../../workflows/patches';

const TOKEN = 'codec-token-'.padEnd(40, 'y');

/** Topic → an llm answer and an image (a file the run produces). */
function flow(slug: string, prompt = 'Q {{topic}}') {
  return {
    slug,
    nodes: [
      { id: 'topic', type: 'user_input', label: 'Topic', input_type: 'text' },
      { id: 'ask', type: 'llm', model: 'gpt-test', prompt },
      { id: 'draw', type: 'image_generation', model: 'img-test', prompt: 'A {{topic}}', n: 1 },
      { id: 'answer', type: 'user_result', label: 'Answer' },
      { id: 'image', type: 'user_result', label: 'Image' },
    ],
    edges: [
      { from: 'topic', to: 'ask', port: 'topic' },
      { from: 'topic', to: 'draw', port: 'topic' },
      { from: 'ask', to: 'answer' },
      { from: 'draw', to: 'image' },
    ],
  };
}

const PATCH_IDS: string[] = Object.keys(PATCHES);
const LOCAL_ACTIVITY_MARKER =
  'activity_id,activity_type,attempt,backoff,complete_time,original_schedule_time,seq';

/**
 * What a run's history may hold unsealed: its search attributes (account, workflow, version), and
 * what Temporal's SDK writes itself: a patch's marker and the `TemporalChangeVersion` search
 * attribute listing patch ids, and the bookkeeping of the local activity that ends the run
 * (sequence, attempt, type, times; its result is sealed).
 */
function isBookkeeping(value: unknown): boolean {
  if (typeof value === 'number') return true;
  if (typeof value === 'string') return /^(acct|wf)_[0-9A-Z]{26}$/.test(value);
  if (Array.isArray(value)) return value.every((id) => PATCH_IDS.includes(id));
  if (!value || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  const keys = Object.keys(v).sort().join(',');
  if (keys === 'deprecated,id')
    return PATCH_IDS.includes(v.id as string) && typeof v.deprecated === 'boolean';
  return keys === LOCAL_ACTIVITY_MARKER && v.activity_type === 'finalizeRun';
}

/** Every payload (`{metadata, data}`) of a history as the Temporal CLI prints it. */
function payloadsOf(historyJson: string): { metadata: Record<string, string>; data: string }[] {
  const found: { metadata: Record<string, string>; data: string }[] = [];
  const walk = (v: any): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      if (v.metadata && typeof v.metadata === 'object' && typeof v.data === 'string')
        found.push({ metadata: v.metadata, data: v.data });
      else Object.values(v).forEach(walk);
    }
  };
  walk(JSON.parse(historyJson));
  return found;
}

const b64text = (b64: string) => Buffer.from(b64, 'base64').toString('latin1');

describe('deleting a run (D39)', function () {
  this.timeout(180_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: {
      CODEC_TOKEN: TOKEN,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORK: 'true',
      PRICES: JSON.stringify({
        'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 },
        'img-test': { per_image: 0.01 },
      }),
    },
  });
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await startWebhookReceiver();
    await publish(ctx.svc.url, ctx.key, flow('erase-me'));
  });
  after(async () => receiver?.close());

  /** Decodes payloads through the codec server, as the Temporal UI and CLI do. */
  const decode = async (payloads: { metadata: Record<string, string>; data: string }[]) => {
    const res = await call(ctx.svc.url, 'POST', '/codec/decode', {
      headers: { authorization: `Bearer ${TOKEN}` },
      body: { payloads },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.payloads as { metadata: Record<string, string>; data: string }[];
  };

  /** The store as an erasure sees it when its process dies right after marking the record. */
  const dies = new Error('the API process died');
  const cutAfterMark = (collections: typeof ctx.svc.store.collections) =>
    ({
      ...collections,
      idempotencyKeys: {
        find: () => {
          throw dies;
        },
      },
    }) as unknown as typeof collections;

  it('a finished run: 200, then 404 everywhere, nothing left in the store, its history undecryptable, its ledger amount kept', async () => {
    const marker = `SECRET-${randomBytes(6).toString('hex')}`;
    const body = {
      workflowId: 'erase-me',
      inputs: { topic: marker },
      webhook: `${receiver.url}/erase`,
      metadata: { customer: marker },
    };
    const headers = { 'idempotency-key': `erase-${marker}` };
    const runId = await startRun(ctx.svc.url, ctx.key, body.workflowId, body.inputs, {
      headers,
      body,
    });
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(run.status, 'completed', JSON.stringify(run));
    assert.ok(JSON.stringify(run.output.answer).includes(marker), 'the answer holds the input');
    const image = run.output.image[0].parts[0];
    const fileId = (await filesCollection(ctx.svc.store.db).findOne({ 'metadata.run_id': runId }))!
      ._id;
    await waitFor(async () => (receiver.hitsOn('/erase').length > 0 ? true : undefined), {
      what: 'the webhook',
    });
    await waitFor(
      async () =>
        (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key })).body.webhook
          ?.status === 'delivered' || undefined,
      { what: 'the delivery recorded' },
    );
    const link = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, {
      key: ctx.key,
    });
    assert.equal(link.status, 200);
    assert.equal((await fetch(image.url)).status, 200);

    // The history as Temporal (or an archive, or a backup of it) keeps it.
    const { address } = ctx.svc.config.temporal;
    const histories = [
      await showHistory(address, runId),
      await showHistory(address, webhookWorkflowId(runId)),
    ];
    const payloads = histories.flatMap(payloadsOf);
    assert.ok(payloads.length > 5, `${payloads.length} payloads`);
    for (const p of payloads) assert.ok(!b64text(p.data).includes(marker), 'sealed in history');
    const opened = (await decode(payloads)).map((p) => b64text(p.data));
    assert.ok(
      opened.some((t) => t.includes(marker)),
      'before the delete, the codec server opens the input',
    );

    const stored = async () =>
      (await call(ctx.svc.url, 'GET', '/api/v1/account', { key: ctx.key })).body.file_storage
        .used_bytes as number;
    const storedBefore = await stored(); // this process now knows the sum
    const deleted = await call(ctx.svc.url, 'DELETE', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.deepEqual(deleted.body, { id: runId, object: 'run', deleted: true });
    // Its file leaves the account's storage at once (before: counted until the sum was read anew).
    assert.ok((await stored()) < storedBefore, 'the run’s file no longer counted');

    // Every read is 404, a second delete too.
    for (const [method, path] of [
      ['GET', `/api/v1/runs/${runId}`],
      ['GET', `/api/v1/runs/${runId}/stream`],
      ['GET', `/api/v1/runs/${runId}/outputs/answer`],
      ['POST', `/api/v1/runs/${runId}/stream-link`],
      ['POST', `/api/v1/runs/${runId}/cancel`],
      ['GET', `/api/v1/files/${fileId}`],
      ['DELETE', `/api/v1/runs/${runId}`],
    ] as const) {
      const res = await call(ctx.svc.url, method, path, { key: ctx.key });
      assert.equal(res.status, 404, `${method} ${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error.type, 'not_found_error');
    }
    assert.equal((await fetch(link.body.url)).status, 404, 'the stream link');
    assert.equal((await fetch(image.url)).status, 404, 'the file it produced');
    const listed = await call(ctx.svc.url, 'GET', '/api/v1/runs?limit=100', { key: ctx.key });
    assert.ok(!listed.body.data.some((r: any) => r.id === runId), 'not listed');

    // Nothing of it in the store; the ledger keeps its amount, and only that.
    const c = ctx.svc.store.collections;
    assert.equal(await c.runs.countDocuments({ _id: runId }), 0);
    assert.equal(await c.runChunks.countDocuments({ run_id: runId }), 0);
    assert.equal(await c.idempotencyKeys.countDocuments({ run_id: runId }), 0);
    assert.equal(await c.webhookDeliveries.countDocuments({ run_id: runId }), 0);
    assert.equal(
      await filesCollection(ctx.svc.store.db).countDocuments({ 'metadata.run_id': runId }),
      0,
    );
    assert.equal(
      await ctx.svc.store.db.collection('files.chunks').countDocuments({ files_id: fileId }),
      0,
    );
    const debit = await c.ledger.findOne({ _id: deriveId('led', runId) });
    assert.ok(debit && debit.amount_usd < 0, JSON.stringify(debit));
    assert.equal(debit.amount_usd, -run.total_cost);
    assert.ok(!JSON.stringify(debit).includes(marker), 'the ledger holds no input');
    for (const name of await ctx.svc.store.db.listCollections().toArray()) {
      const hits = await ctx.svc.store.db
        .collection(name.name)
        .find({})
        .toArray()
        .then((docs) => docs.filter((d) => JSON.stringify(d).includes(marker)));
      assert.deepEqual(hits, [], `${name.name} still holds the input`);
    }

    // The same history, decoded through the codec server, no longer yields the input: the run's
    // payloads come back still sealed (its key is gone), everything else as before.
    const after = await decode(payloads);
    const texts = after.map((p) => b64text(p.data));
    assert.ok(!texts.some((t) => t.includes(marker)), 'the codec server opened a deleted run');
    const encrypted = (p: { metadata: Record<string, string> }) =>
      b64text(p.metadata.encoding) === 'binary/encrypted';
    for (const [i, p] of payloads.entries())
      assert.equal(encrypted(after[i]), encrypted(p), `payload ${i} was opened`);
    // What was never sealed is the search attributes and Temporal's own bookkeeping: no customer data.
    const plain = payloads.filter((p) => !encrypted(p)).map((p) => JSON.parse(b64text(p.data)));
    // (the run's search attributes, its patch marker and change version, its finalize's marker; the
    // webhook workflow's search attributes, and its two patches' markers and change versions)
    assert.ok(plain.length <= 12, JSON.stringify(plain));
    for (const value of plain) assert.ok(isBookkeeping(value), JSON.stringify(value));
    // Temporal's own copy is deleted too (asynchronously): gone, or as unreadable as the capture.
    const later = await showHistory(address, runId, {
      endpoint: `${ctx.svc.url}/codec`,
      token: TOKEN,
    }).catch(() => '{"events": []}');
    assert.ok(!later.includes(marker));

    // Its Idempotency-Key went with it: the same request starts a new run.
    const again = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      headers,
      body,
    });
    assert.equal(again.status, 202);
    assert.notEqual(again.body.run_id, runId);
    await waitForRun(ctx.svc.url, ctx.key, again.body.run_id);
  });

  it('a live run is cancelled first, billed for what it did, then deleted', async () => {
    await publish(ctx.svc.url, ctx.key, flow('erase-live', 'slow:20000 {{topic}}'));
    const runId = await startRun(ctx.svc.url, ctx.key, 'erase-live', { topic: 'x' });
    await waitFor(
      async () =>
        (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key })).body.status ===
          'running' || undefined,
      { what: 'the run running' },
    );
    const started = Date.now();
    const deleted = await call(ctx.svc.url, 'DELETE', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.ok(Date.now() - started < 15_000, 'cancelled, not waited out');
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key })).status,
      404,
    );
    // Its end was booked by its own finalize before the record went (the start fee at least).
    const debit = await ctx.svc.store.collections.ledger.findOne({ _id: deriveId('led', runId) });
    assert.ok(debit, 'the cancelled run was billed');
    assert.equal(await ctx.svc.store.collections.runs.countDocuments({ _id: runId }), 0);
  });

  it('a delete cut short (its API process died) leaves a run no read shows, and a repeated DELETE finishes it (before: `completed` with no items, and listed)', async () => {
    const headers = { 'idempotency-key': `cut-${randomBytes(6).toString('hex')}` };
    const body = { workflowId: 'erase-me', inputs: { topic: 'cut short' } };
    const runId = await startRun(ctx.svc.url, ctx.key, body.workflowId, body.inputs, {
      headers,
      body,
    });
    // Awaited in the store, not by a GET: no view of it cached in this process.
    const { collections, db } = ctx.svc.store;
    await waitFor(async () => (await findRunRecord(collections, runId))?.finalized || undefined, {
      what: 'the run finalized',
    });
    const link = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, {
      key: ctx.key,
    });
    assert.equal(link.status, 200);
    await assert.rejects(eraseRun(cutAfterMark(collections), db, runId), dies);
    assert.equal((await findRunRecord(collections, runId))?.deleting, true, 'the record is kept');
    for (const path of [`/api/v1/runs/${runId}`, `/api/v1/runs/${runId}/outputs/answer`]) {
      const read = await call(ctx.svc.url, 'GET', path, { key: ctx.key });
      assert.equal(read.status, 404, path);
      assert.equal(read.body.error.type, 'not_found_error');
    }
    assert.equal((await call(link.body.url, 'GET', '')).status, 404, 'its stream link');
    const list = await call(ctx.svc.url, 'GET', '/api/v1/runs?limit=100', { key: ctx.key });
    assert.ok(!list.body.data.some((run: { id: string }) => run.id === runId), 'listed');
    // Its Idempotency-Key, left by the cut, goes as the DELETE would have taken it: the same
    // request starts a new run (before: it retried the taken run id, unanswered, for 24 h).
    const repeat = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      headers,
      body,
    });
    assert.equal(repeat.status, 202, JSON.stringify(repeat.body));
    assert.notEqual(repeat.body.run_id, runId);
    const again = await call(ctx.svc.url, 'DELETE', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(await findRunRecord(collections, runId), null);
  });

  it('a repeated DELETE finishes a run never finalized whose delete was cut short (before: 404 for good, its record kept)', async () => {
    const { collections, db } = ctx.svc.store;
    // A record whose start died before its workflow: never finalized.
    const runId = generateId('run');
    const key = (await collections.apiKeys.findOne({ account_id: ctx.accountId }))!;
    await insertRun(
      collections,
      pendingRun({ _id: runId, account_id: ctx.accountId, key_id: key._id }),
    );
    await assert.rejects(eraseRun(cutAfterMark(collections), db, runId), dies);
    const again = await call(ctx.svc.url, 'DELETE', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(await findRunRecord(collections, runId), null);
  });

  it("answers 404 for another account's run, an unknown id and a malformed one", async () => {
    const runId = await startRun(ctx.svc.url, ctx.key, 'erase-me', { topic: 'mine' });
    const other = await ctx.newAccount();
    for (const [key, id] of [
      [other.key, runId],
      [ctx.key, 'run_01JZZZZZZZZZZZZZZZZZZZZZZZ'],
      [ctx.key, 'nope'],
    ]) {
      const res = await call(ctx.svc.url, 'DELETE', `/api/v1/runs/${id}`, { key });
      assert.equal(res.status, 404);
      assert.equal(res.body.error.type, 'not_found_error');
    }
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, runId)).status, 'completed');
  });
});
