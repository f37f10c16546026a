/**
 * `npm run record-histories`: records real workflow histories for the replay test
 * (test/workflows/replay.unit.test.ts, the versioning policy of workflows/patches.ts). It starts
 * the real stack (Temporal dev server, FerretDB) with the API and a worker in this process, runs
 * every workflow type in every shape against local fakes (provider, webhook receiver), and saves
 * each history as Temporal's JSON into test/workflows/histories/<version>-<commit>/, with the run
 * secrets that open its payloads (D39) and a manifest. Payloads are sealed by the production codec
 * under the public test key REPLAY_PAYLOAD_KEYS (D32); the script refuses to save a history in
 * which the test data appears in plaintext.
 *
 *   npm run record-histories                 # adds this release's directory
 *   npm run record-histories -- --replace    # and removes every other release's directory
 *
 * Record from a committed tree: the directory is named after HEAD (and marked `-dirty` when
 * workflows/ has uncommitted changes). The patch example's histories are recorded once, when missing.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { runOfWorkflowId } from '../../lib/codec/run-keys';
import { runPayloadSecret } from '../../store/run-secrets';
import { RETENTION_WORKFLOW_TYPE, webhookWorkflowId } from '../../workflows/definitions';
import { FAILURE_CONVERTER_PATH } from '../../lib/codec/data-converter';
import { startFakeOpenAI } from '../../test/fakes/openai';
import { startWebhookReceiver } from '../../test/fakes/webhook-receiver';
import { newAccount } from '../../test/support/accounts';
import {
  batchWorkflow,
  greetingWorkflow,
  llmWorkflow,
  publish,
  rowsWorkflow,
  textRowsWorkflow,
  waitForRun,
} from '../../test/support/fixtures';
import {
  HISTORIES_DIR,
  MANIFEST_FILE,
  PATCH_EXAMPLE_DIR,
  REPLAY_PAYLOAD_KEYS,
  RUN_SECRETS_FILE,
  historyToJSON,
  releaseDirs,
  replayDataConverter,
} from '../../test/support/histories';
import { call, waitFor } from '../../test/support/http';
import {
  callInputGraph,
  linesGraph,
  readersGraph,
  textGraph,
} from '../../test/support/bound-graphs';
import { uploadFile } from '../../test/support/files';
import { startRun } from '../../test/support/runs';
import { startService, temporalClient, type TestService } from '../../test/support/service';
import { openSse } from '../../test/support/sse';
import { stopTestStack, testStack } from '../../test/support/stack';
import { patchExampleActivities } from '../../test/workflows/fixtures/patch-example/activities';

const ROOT = path.join(__dirname, '..', '..');
/** In every input: a history that shows it anywhere, even base64-encoded, is customer data in plaintext. */
const MARKER = 'Plaintext-Marker-7f3a';
const PRICES = JSON.stringify({ 'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 } });

interface Recorded {
  shape: string;
  workflowId: string;
  service: TestService;
}

function release(): { name: string; version: string; commit: string; dirty: boolean } {
  const version = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  const commit = git('rev-parse', '--short=12', 'HEAD').trim();
  const dirty = git('status', '--porcelain', '--', 'workflows').trim() !== '';
  return { name: `${version}-${commit}${dirty ? '-dirty' : ''}`, version, commit, dirty };
}

/** Every base64 string of a history JSON decoded, with the JSON itself: where plaintext would show. */
function assertNoPlaintext(file: string, json: string): void {
  const texts = [json];
  for (const m of json.matchAll(/"([A-Za-z0-9+/]{16,}={0,2})"/g))
    texts.push(Buffer.from(m[1], 'base64').toString('latin1'));
  assert.ok(!texts.some((t) => t.includes(MARKER)), `${file}: test data in plaintext (D32)`);
}

async function main(): Promise<void> {
  const replace = process.argv.includes('--replace');
  const rel = release();
  const outDir = path.join(HISTORIES_DIR, rel.name);
  const log = (line: string) => console.log(`[record-histories] ${line}`);
  log(
    `recording into ${path.relative(ROOT, outDir)}${rel.dirty ? ' (workflows/ has uncommitted changes)' : ''}`,
  );

  const fake = await startFakeOpenAI();
  const receiver = await startWebhookReceiver();
  const base = { PAYLOAD_KEYS: REPLAY_PAYLOAD_KEYS, PRICES, OPENAI_BASE_URL: fake.baseUrl };
  const svc = await startService({
    env: {
      ...base,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORK: 'true',
      WEBHOOK_RETRY_INITIAL_MS: '100',
    },
  });
  const timing = await startService({ env: { ...base, RUN_TIMEOUT_MS: '1500' } });
  const recorded: Recorded[] = [];
  try {
    const { key } = await newAccount(svc.store.collections, 100);
    const { key: timingKey } = await newAccount(timing.store.collections, 10);
    await publish(svc.url, key, llmWorkflow('small'));
    await publish(svc.url, key, rowsWorkflow('big', '{{row}}', { concurrency: 8 }));
    await publish(svc.url, key, batchWorkflow('items', ['a', `b ${MARKER} status:400`, 'c']));
    await publish(svc.url, key, greetingWorkflow('greet'));
    await publish(timing.url, timingKey, llmWorkflow('small'));
    const run = async (shape: string, s: TestService, k: string, slug: string, inputs: object) => {
      const runId = await startRun(s.url, k, slug, inputs as Record<string, unknown>);
      recorded.push({ shape, workflowId: runId, service: s });
      return runId;
    };
    /** D38: a re-run of `parentId`'s failed items, recorded as `shape`. */
    const rerunFailed = async (shape: string, parentId: string) => {
      const res = await call(svc.url, 'POST', `/api/v1/runs/${parentId}/rerun`, {
        key,
        body: { items: 'failed' },
      });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      const runId = (res.body as { run_id: string }).run_id;
      recorded.push({ shape, workflowId: runId, service: svc });
      return runId;
    };

    log('small run, retried node, failed item, failed node');
    const done = await Promise.all([
      run('run-small', svc, key, 'small', { topic: `${MARKER} small` }),
      run('run-retried', svc, key, 'small', { topic: `${MARKER} flaky:rec:1` }),
      run('run-failed-item', svc, key, 'items', {}),
      run('run-failed-node', svc, key, 'small', { topic: `${MARKER} status:503` }),
    ]);
    const ends = await Promise.all(done.map((id) => waitForRun(svc.url, key, id, 120_000)));
    assert.deepEqual(
      ends.map((r) => r.status),
      ['completed', 'completed', 'completed', 'failed'],
    );

    log('re-run of the failed item (D38) and a run under a cost cap (D36)');
    const rerunId = await rerunFailed('run-rerun-failed', done[2]);
    const capped = await startRun(
      svc.url,
      key,
      'big',
      { rows: Array.from({ length: 40 }, (_, i) => `${MARKER} capped ${i}`) },
      { body: { max_cost: 5 } },
    );
    recorded.push({ shape: 'run-cost-capped', workflowId: capped, service: svc });
    // Blocks of 100 rows hold $1 at $0.01 a call: a cap of $0.5 shrinks each, and a shrunk block
    // asks again once its rows' cost is counted (patch cost-cap-shrunk-blocks).
    const shrunk = await startRun(
      svc.url,
      key,
      'big',
      { rows: Array.from({ length: 300 }, (_, i) => `${MARKER} shrunk ${i}`) },
      { body: { max_cost: 0.5 } },
    );
    recorded.push({ shape: 'run-cost-cap-shrunk', workflowId: shrunk, service: svc });
    for (const id of [rerunId, capped, shrunk])
      assert.equal((await waitForRun(svc.url, key, id, 120_000)).status, 'completed');

    log("a run over a file's rows that outgrows its account's credit (D17: patch credit-cap)");
    const poor = await newAccount(svc.store.collections, 0.05);
    await publish(
      svc.url,
      poor.key,
      rowsWorkflow('file-rows', '{{row}}', { concurrency: 8, input_type: 'file' }),
    );
    const rowsFile = await uploadFile(
      svc.url,
      poor.key,
      'rows.jsonl',
      Array.from({ length: 40 }, (_, i) => JSON.stringify(`${MARKER} credit ${i}`)).join('\n'),
    );
    const creditCapped = await startRun(svc.url, poor.key, 'file-rows', { rows: rowsFile });
    recorded.push({ shape: 'run-credit-capped', workflowId: creditCapped, service: svc });
    const short = await waitForRun(svc.url, poor.key, creditCapped, 120_000);
    assert.equal(short.status, 'failed');
    assert.match(short.error, /^insufficient credits/);

    log('big chunked run (400 rows, concurrency 8: chunks of rows; 8 rows refused)');
    const rows = Array.from(
      { length: 400 },
      (_, i) => `${MARKER} row ${i}${i % 50 === 7 ? ' status:400' : ''}`,
    );
    const big = await run('run-big-chunked', svc, key, 'big', { rows });
    assert.equal((await waitForRun(svc.url, key, big, 300_000)).status, 'completed');

    log(
      "a big node's stored list through text and join (40 rows at concurrency 8: patch stored-list-nodes)",
    );
    const pureDoc = rowsWorkflow('stored-pure', '{{row}}', { concurrency: 8 });
    await publish(svc.url, key, {
      ...pureDoc,
      nodes: [
        ...pureDoc.nodes,
        { id: 'say', type: 'text', template: 'A: {{row}}' },
        { id: 'all', type: 'join' },
        { id: 'joined', type: 'user_result', label: 'Joined' },
      ],
      edges: [
        ...pureDoc.edges,
        { from: 'ask', to: 'say', port: 'row' },
        { from: 'say', to: 'all' },
        { from: 'all', to: 'joined' },
      ],
    });
    const pure = await run('run-stored-pure-nodes', svc, key, 'stored-pure', {
      rows: Array.from({ length: 40 }, (_, i) => `${MARKER} pure ${i}`),
    });
    assert.equal((await waitForRun(svc.url, key, pure, 120_000)).status, 'completed');

    log("a big node's stored list split again by a batch (patch stored-list-batch)");
    const batchDoc = rowsWorkflow('stored-batch', '{{row}}', { concurrency: 8 });
    await publish(svc.url, key, {
      ...batchDoc,
      nodes: [
        ...batchDoc.nodes,
        { id: 'again', type: 'batch' },
        { id: 'lines', type: 'user_result', label: 'Lines' },
      ],
      edges: [
        ...batchDoc.edges,
        { from: 'ask', to: 'again', port: 'rows' },
        { from: 'again', to: 'lines' },
      ],
    });
    const batched = await run('run-stored-batch', svc, key, 'stored-batch', {
      rows: Array.from({ length: 40 }, (_, i) => `${MARKER} split ${i}\nline two`),
    });
    assert.equal((await waitForRun(svc.url, key, batched, 120_000)).status, 'completed');

    log("a join past 1 MiB kept in the store (D35: a big llm's answers repeated by a text node)");
    const joinDoc = rowsWorkflow('stored-join', '{{row}}', { concurrency: 8 });
    await publish(svc.url, key, {
      ...joinDoc,
      nodes: [
        ...joinDoc.nodes,
        // Sixteen times each 3 KB answer: a 2.2 MB join from a small request (a small history).
        { id: 'twice', type: 'text', template: Array(16).fill('{{row}}').join(' ') },
        { id: 'all', type: 'join' },
        { id: 'joined', type: 'user_result', label: 'Joined' },
      ],
      edges: [
        ...joinDoc.edges,
        { from: 'ask', to: 'twice', port: 'row' },
        { from: 'twice', to: 'all' },
        { from: 'all', to: 'joined' },
      ],
    });
    const joinedRun = await run('run-stored-join', svc, key, 'stored-join', {
      rows: Array.from({ length: 45 }, (_, i) => `${MARKER} join ${i} ${'j'.repeat(3_000)}`),
    });
    assert.equal((await waitForRun(svc.url, key, joinedRun, 120_000)).status, 'completed');

    log(
      'a text item past its bound (patch text-bounds) and a text node of a big list in blocks (big-text-in-blocks)',
    );
    await publish(svc.url, key, {
      slug: 'text-bounds',
      nodes: [
        { id: 'a', type: 'user_input', label: 'A', input_type: 'text' },
        { id: 'many', type: 'text', template: '{{a}}'.repeat(200) },
        { id: 'out', type: 'user_result', label: 'Out' },
      ],
      edges: [
        { from: 'a', to: 'many', port: 'a' },
        { from: 'many', to: 'out' },
      ],
    });
    const bounded = await run('run-text-bounds', svc, key, 'text-bounds', {
      a: `${MARKER} ${'b'.repeat(6_000)}`, // 200 copies: 1.2 MB, past an item's 1 MiB
    });
    assert.equal((await waitForRun(svc.url, key, bounded, 120_000)).status, 'completed');
    await publish(svc.url, key, textRowsWorkflow('big-text', 'Q: {{row}}', { concurrency: 8 }));
    const bigText = await run('run-big-text', svc, key, 'big-text', {
      rows: Array.from({ length: 40 }, (_, i) => `${MARKER} text ${i}`),
    });
    assert.equal((await waitForRun(svc.url, key, bigText, 120_000)).status, 'completed');

    log(
      'graphs past the bounds of what a run does (patches text-work-bound, run-items-bound, inline-reads-bound, call-input-bound, batch-rows-depth)',
    );
    const bounds = [
      {
        shape: 'run-text-work-bound',
        graph: textGraph('rec-lookups', 40, 128, '{{r}}'.repeat(999) + '{{a}}'),
        inputs: { a: MARKER },
        status: 'completed',
      },
      {
        shape: 'run-items-bound',
        graph: linesGraph('rec-lines', 3, 1, 'result'),
        inputs: { a: 'x\n'.repeat(1000) },
        status: 'failed',
      },
      {
        shape: 'run-reads-bound',
        graph: readersGraph('rec-readers', 201),
        inputs: { r: JSON.stringify(Array.from({ length: 10_000 }, () => [0])) },
        status: 'failed',
      },
      {
        shape: 'run-call-input-bound',
        graph: callInputGraph('rec-call-input', 40),
        inputs: { a: `${MARKER} ${'x'.repeat(40_000)}` },
        status: 'failed',
      },
      {
        shape: 'run-batch-rows-depth',
        graph: textRowsWorkflow('rec-deep', '{{row}}', { input_type: 'text' }),
        inputs: { rows: `${'['.repeat(70)}"${MARKER}"${']'.repeat(70)}` },
        status: 'failed',
      },
    ];
    for (const { shape, graph, inputs, status } of bounds) {
      await publish(svc.url, key, graph);
      const id = await run(shape, svc, key, graph.slug, inputs);
      const end = await waitForRun(svc.url, key, id, 120_000);
      assert.equal(end.status, status, `${shape}: ${JSON.stringify(end.error)}`);
    }

    log("re-run of the big run's failed rows (D38: the rows its record lists, one block)");
    const bigRerunId = await rerunFailed('run-rerun-failed-rows', big);
    assert.equal((await waitForRun(svc.url, key, bigRerunId, 300_000)).status, 'completed');

    log('streamed run');
    const stream = await openSse(`${svc.url}/api/v1/responses`, {
      method: 'POST',
      key,
      body: { workflowId: 'small', stream: true, inputs: { topic: `${MARKER} streamed` } },
    });
    assert.equal(stream.status, 200);
    const created = await stream.until((f) => f.event?.type === 'response.created');
    const streamed = created.event.response.run_id as string;
    recorded.push({ shape: 'run-streamed', workflowId: streamed, service: svc });
    await stream.closed;
    assert.equal(stream.frames.at(-1)?.data, '[DONE]');

    log(
      'awaited runs (D28 Prefer: wait): one that ends in its first workflow task, one after a node',
    );
    for (const [shape, slug, inputs] of [
      ['run-awaited-pure', 'greet', { name: MARKER }],
      ['run-awaited', 'small', { topic: `${MARKER} awaited` }],
    ] as const) {
      const res = await call(svc.url, 'POST', '/api/v1/responses', {
        key,
        headers: { prefer: 'wait=60' },
        body: { workflowId: slug, inputs },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.status, 'completed');
      recorded.push({ shape, workflowId: res.body.id, service: svc });
    }

    log('cancelled run');
    const cancelled = await run('run-cancelled', svc, key, 'small', {
      topic: `${MARKER} slow:60000 cancel-me`,
    });
    await waitFor(async () => fake.requestsWith('cancel-me').length > 0 || undefined, {
      what: 'the provider call of the run to cancel',
    });
    const res = await call(svc.url, 'POST', `/api/v1/runs/${cancelled}/cancel`, { key });
    assert.ok(res.status < 300, JSON.stringify(res.body));
    assert.equal((await waitForRun(svc.url, key, cancelled)).status, 'cancelled');

    log(
      'a cancelled run that kept rows after an unfinished one (patch kept-items-at-rows), and a re-run of an llm of lists (rerun-list-rows)',
    );
    await publish(
      svc.url,
      key,
      batchWorkflow('kept-rows', [
        `${MARKER} slow:60000 keep-row`,
        `${MARKER} kept`,
        `${MARKER} kept`,
      ]),
    );
    const kept = await run('run-kept-at-rows', svc, key, 'kept-rows', {});
    await waitFor(async () => {
      const page = await call(svc.url, 'GET', `/api/v1/runs/${kept}/outputs/answers`, { key });
      const done = (page.body.data ?? []).filter((i: { status: string }) => i.status !== 'running');
      return done.length === 2 || undefined;
    });
    await call(svc.url, 'POST', `/api/v1/runs/${kept}/cancel`, { key });
    assert.equal((await waitForRun(svc.url, key, kept)).status, 'cancelled');
    const listDoc = batchWorkflow(
      'rec-lists',
      ['a,b', `refuseonce:reclist ${MARKER},y`, 'c,d'],
      'list:{{row}}',
    );
    await publish(svc.url, key, {
      ...listDoc,
      nodes: listDoc.nodes.map((n) => (n.id === 'ask' ? { ...n, output: 'list' } : n)),
    });
    const lists = await startRun(svc.url, key, 'rec-lists', {});
    assert.equal((await waitForRun(svc.url, key, lists)).status, 'completed');
    const listsRerunId = await rerunFailed('run-rerun-list-rows', lists);
    assert.equal((await waitForRun(svc.url, key, listsRerunId)).status, 'completed');

    log('timed-out run (RUN_TIMEOUT_MS=1500)');
    const timedOut = await run('run-timed-out', timing, timingKey, 'small', {
      topic: `${MARKER} slow:20000`,
    });
    const timedOutRun = await waitForRun(timing.url, timingKey, timedOut);
    assert.equal(timedOutRun.status, 'failed');

    log('run with a webhook delivered on the third attempt');
    receiver.script('/hook', [{ status: 500 }, { status: 503 }]);
    const hooked = await startRun(
      svc.url,
      key,
      'small',
      { topic: `${MARKER} hooked` },
      { body: { webhook: `${receiver.url}/hook` } },
    );
    recorded.push({ shape: 'run-webhook', workflowId: hooked, service: svc });
    recorded.push({
      shape: 'webhook-delivery',
      workflowId: webhookWorkflowId(hooked),
      service: svc,
    });
    await waitForRun(svc.url, key, hooked);
    // The delivery starts once the run's record is final, just before the run's workflow ends.
    await temporalClient(svc).workflow.getHandle(hooked).result();
    const delivery = await temporalClient(svc)
      .workflow.getHandle(webhookWorkflowId(hooked))
      .result();
    assert.deepEqual(delivery, { delivered: true });
    assert.equal(receiver.hitsOn('/hook').length, 3);

    log('retention');
    const retentionId = `retention-record-${Date.now()}`;
    await temporalClient(svc).workflow.execute(RETENTION_WORKFLOW_TYPE, {
      taskQueue: svc.config.temporal.taskQueue,
      workflowId: retentionId,
      args: [],
    });
    recorded.push({ shape: 'retention', workflowId: retentionId, service: svc });

    // Every workflow closed, then its history and the secret of its run.
    fs.rmSync(outDir, { recursive: true, force: true });
    fs.mkdirSync(outDir, { recursive: true });
    const secrets: Record<string, string> = {};
    for (const r of recorded) {
      const handle = temporalClient(r.service).workflow.getHandle(r.workflowId);
      await handle.result().catch(() => undefined);
      const json = historyToJSON(await handle.fetchHistory());
      const file = `${r.shape}@${r.workflowId}.json`;
      assertNoPlaintext(file, json);
      fs.writeFileSync(path.join(outDir, file), json);
      const runId = runOfWorkflowId(r.workflowId);
      if (runId) {
        const secret = await runPayloadSecret(r.service.store.db, runId);
        if (secret) secrets[runId] = secret.toString('base64');
      }
    }
    fs.writeFileSync(path.join(outDir, RUN_SECRETS_FILE), `${JSON.stringify(secrets, null, 2)}\n`);
    fs.writeFileSync(
      path.join(outDir, MANIFEST_FILE),
      `${JSON.stringify(
        {
          release: rel.name,
          version: rel.version,
          commit: rel.commit,
          workflowsDirty: rel.dirty,
          recordedAt: new Date().toISOString(),
          histories: recorded.map((r) => `${r.shape}@${r.workflowId}.json`),
        },
        null,
        2,
      )}\n`,
    );
    log(`saved ${recorded.length} histories`);

    await recordPatchExample(log);

    if (replace) {
      for (const dir of releaseDirs()) {
        if (dir === outDir) continue;
        log(`removing ${path.relative(ROOT, dir)}`);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await svc.close();
    await timing.close();
    await fake.close();
    await receiver.close();
  }
}

/** The patch example's versions whose histories the replay test replays (docs/deploy.md "Changing workflow code safely"). */
const PATCH_EXAMPLE_RECORDED = ['v1', 'v2-patched', 'v3-deprecated'];

async function recordPatchExample(log: (line: string) => void): Promise<void> {
  const missing = PATCH_EXAMPLE_RECORDED.filter(
    (v) => !fs.existsSync(path.join(PATCH_EXAMPLE_DIR, `${v}@patch-example-${v}.json`)),
  );
  if (missing.length === 0) return;
  fs.mkdirSync(PATCH_EXAMPLE_DIR, { recursive: true });
  const { stack } = await testStack();
  const connection = await NativeConnection.connect({ address: stack.temporal.address });
  const clientConnection = await Connection.connect({ address: stack.temporal.address });
  const dataConverter = replayDataConverter();
  const client = new Client({ connection: clientConnection, dataConverter });
  try {
    for (const version of missing) {
      log(`patch example ${version}`);
      const taskQueue = `patch-example-${version}-${Date.now()}`;
      const worker = await Worker.create({
        connection,
        taskQueue,
        workflowBundle: await bundleWorkflowCode({
          workflowsPath: path.join(
            ROOT,
            'test',
            'workflows',
            'fixtures',
            'patch-example',
            `${version}.ts`,
          ),
          failureConverterPath: FAILURE_CONVERTER_PATH,
          logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error },
        }),
        activities: patchExampleActivities,
        dataConverter,
      });
      const workflowId = `patch-example-${version}`;
      const handle = await worker.runUntil(async () => {
        const h = await client.workflow.start('patchExample', {
          taskQueue,
          workflowId,
          args: [MARKER],
        });
        await h.result();
        return h;
      });
      const json = historyToJSON(await handle.fetchHistory());
      assertNoPlaintext(workflowId, json);
      fs.writeFileSync(path.join(PATCH_EXAMPLE_DIR, `${version}@${workflowId}.json`), json);
    }
  } finally {
    await clientConnection.close();
    await connection.close();
  }
}

main()
  .then(async () => {
    await stopTestStack();
    process.exit(0);
  })
  .catch(async (err: unknown) => {
    console.error(err);
    await stopTestStack().catch(() => undefined);
    process.exit(1);
  });
