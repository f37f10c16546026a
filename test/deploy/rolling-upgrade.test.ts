/**
 * A rolling upgrade of the workers under 200 runs in flight, on the production Temporal
 * (temporal-server 1.29.1 on PostgreSQL, test/deploy/support/production-stack.ts): two workers
 * of another commit (by default the one that recorded the newest saved histories, the release
 * before; WRS_UPGRADE_FROM names another) are replaced by workers of this tree: the new ones come
 * up while the runs start (a surge; on a loaded machine a worker takes many seconds to start, and
 * the runs must still be in flight when the old ones go), then each old one gets SIGTERM in turn
 * and drains. Every run completes, none stays running, each is billed once, every stream ends with
 * [DONE] (resumed with Last-Event-ID if it is cut), the webhook is delivered once, no workflow
 * task fails (but for the server's UnhandledCommand, see below), and runs cross the upgrade
 * (their workflow tasks ran on an old and a new worker).
 */
import assert from 'node:assert/strict';
import { temporal } from '@temporalio/proto';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver';
import { newAccount } from '../support/accounts';
import { publish, rowsWorkflow, waitForRun } from '../support/fixtures';
import { HISTORIES_DIR, readManifest, releaseDirs } from '../support/histories';
import { call, waitFor } from '../support/http';
import { startService, temporalClient, type TestService } from '../support/service';
import { openSse, type SseClient } from '../support/sse';
import { useProductionStack } from './support/production-stack';
import {
  checkoutBuild,
  currentBuild,
  startWorkerOf,
  type WorkerBuild,
  type WorkerChild,
} from './support/worker-builds';

const RUNS = 200;
const STREAMED = 20;
const ROWS = 3;
const BIG_ROWS = 400;
const PRICE = { input_per_mtok: 1, output_per_mtok: 2 }; // the fake answers 100 tokens in, 50 out
const CALL_USD = (100 * PRICE.input_per_mtok + 50 * PRICE.output_per_mtok) / 1e6;
const START_FEE = 0.001;
const round = (usd: number) => Math.round(usd * 1e9) / 1e9;
const { EventType } = temporal.api.enums.v1;
const UNHANDLED_COMMAND =
  temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND;

/** The commit whose workers are replaced: WRS_UPGRADE_FROM, else the newest saved histories' (the last release). */
function upgradeFrom(): string {
  if (process.env.WRS_UPGRADE_FROM) return process.env.WRS_UPGRADE_FROM;
  const dir = releaseDirs().at(-1);
  assert.ok(dir, `no saved histories under ${HISTORIES_DIR}`);
  return readManifest(dir).commit;
}

describe('rolling upgrade of the workers under 200 runs (production Temporal on PostgreSQL)', function () {
  this.timeout(900_000);
  const prod = useProductionStack();
  let svc: TestService;
  let fake: FakeOpenAI;
  let receiver: WebhookReceiver;
  let key: string;
  let oldBuild: WorkerBuild;
  let newBuild: WorkerBuild;
  const workers: WorkerChild[] = [];
  const env: Record<string, string> = {
    PRICES: JSON.stringify({ 'gpt-test': PRICE }),
    START_FEE_USD: String(START_FEE),
    RATE_LIMIT_STARTS_PER_MINUTE: '10000',
    RATE_LIMIT_REQUESTS_PER_MINUTE: '100000',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_NETWORK: 'true',
    WEBHOOK_RETRY_INITIAL_MS: '100',
    // Long enough for any attempt here to finish on SIGTERM (the longest provider call is 3 s).
    WORKER_SHUTDOWN_GRACE_MS: '30000',
  };

  before(async () => {
    fake = await startFakeOpenAI();
    receiver = await startWebhookReceiver();
    env.OPENAI_BASE_URL = fake.baseUrl;
    svc = await startService({ stack: prod.stack, worker: false, env });
    ({ key } = await newAccount(svc.store.collections, 10_000));
    await publish(svc.url, key, rowsWorkflow('rows', '{{row}}', { concurrency: 8 }));
    const t0 = Date.now();
    oldBuild = checkoutBuild(upgradeFrom());
    newBuild = await currentBuild();
    console.log(
      `      builds: ${oldBuild.name} -> ${newBuild.name} (${((Date.now() - t0) / 1000).toFixed(0)} s)`,
    );
  });
  after(async () => {
    for (const w of workers) await w.kill();
    await svc?.close();
    await fake?.close();
    await receiver?.close();
    oldBuild?.remove();
    newBuild?.remove();
  });

  it('every run completes, billed once; streams end with [DONE]; the webhook arrives once; no workflow task fails', async () => {
    const workerEnv = {
      ...env,
      TEMPORAL_ADDRESS: prod.temporal.address,
      TEMPORAL_NAMESPACE: svc.config.temporal.namespace,
      TEMPORAL_TASK_QUEUE: svc.config.temporal.taskQueue,
      MONGODB_URI: svc.config.mongo.uri,
      MONGODB_DB: svc.config.mongo.dbName,
      RETRY_INITIAL_MS: '50',
    };
    const old = [
      await startWorkerOf(oldBuild, workerEnv),
      await startWorkerOf(oldBuild, workerEnv),
    ];
    workers.push(...old);
    const oldIdentities = new Set(old.map((w) => `${w.child.pid}@`));

    // The new workers start while the runs do (as a surge would): on a loaded machine a worker
    // takes many seconds to come up, and the runs must still be in flight when the old ones go.
    const surge = Promise.all([
      startWorkerOf(newBuild, workerEnv),
      startWorkerOf(newBuild, workerEnv),
    ]);
    // 200 runs: 198 of 3 rows (20 of them streamed by their start), a 400-row chunked run, a webhook run.
    const started = Date.now();
    const rows = (i: number, n: number, ms: (k: number) => number) =>
      Array.from({ length: n }, (_, k) => `slow:${ms(k)} run ${i} row ${k}`);
    const streams = new Map<string, SseClient>();
    const runIds: string[] = [];
    const expected = new Map<string, number>();
    const start = async (i: number, inputs: string[], extra: Record<string, unknown> = {}) => {
      const res = await call(svc.url, 'POST', '/api/v1/responses', {
        key,
        body: { workflowId: 'rows', inputs: { rows: inputs }, ...extra },
      });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      runIds.push(res.body.run_id);
      expected.set(res.body.run_id, round(START_FEE + inputs.length * CALL_USD));
      return res.body.run_id as string;
    };
    for (let batch = 0; batch < RUNS - 2; batch += 22) {
      await Promise.all(
        Array.from({ length: Math.min(22, RUNS - 2 - batch) }, async (_, j) => {
          const i = batch + j;
          const inputs = rows(i, ROWS, (k) => 300 + ((i * 7 + k * 13) % 27) * 100);
          if (i >= STREAMED) return start(i, inputs);
          const sse = await openSse(`${svc.url}/api/v1/responses`, {
            method: 'POST',
            key,
            body: { workflowId: 'rows', stream: true, inputs: { rows: inputs } },
          });
          assert.equal(sse.status, 200);
          const created = await sse.until((f) => f.event?.type === 'response.created');
          const runId = created.event.response.run_id as string;
          runIds.push(runId);
          expected.set(runId, round(START_FEE + ROWS * CALL_USD));
          streams.set(runId, sse);
        }),
      );
    }
    const big = await start(
      RUNS - 2,
      rows(RUNS - 2, BIG_ROWS, () => 150),
    );
    const hooked = await start(
      RUNS - 1,
      rows(RUNS - 1, ROWS, () => 1_000),
      {
        webhook: `${receiver.url}/hook`,
      },
    );
    assert.equal(runIds.length, RUNS);
    const startSeconds = (Date.now() - started) / 1000;

    // Replace the workers one at a time while the runs are in flight.
    await waitFor(async () => fake.requests.length >= 100 || undefined, {
      timeoutMs: 60_000,
      what: 'runs in flight',
    });
    const rollStarted = Date.now();
    // Open runs: their record is final only once the run has ended (store/run-end.ts).
    const running = () => svc.store.collections.runs.countDocuments({ finalized: false });
    const inFlightAtRoll = await running();
    workers.push(...(await surge));
    for (const w of old) assert.equal(await w.terminate(), 0, `old worker exit:\n${w.stderr()}`);
    const rollSeconds = (Date.now() - rollStarted) / 1000;

    // Every run to its end, exactly as billed.
    const ends = await Promise.all(runIds.map((id) => waitForRun(svc.url, key, id, 300_000)));
    const endSeconds = (Date.now() - started) / 1000;
    assert.deepEqual(
      ends.filter((r) => r.status !== 'completed').map((r) => `${r.id}: ${r.status}`),
      [],
    );
    // A run shows completed from its workflow's query before its finalize has written the record
    // (the record follows within the finalize's group commit), so every record is awaited to its end.
    await waitFor(async () => ((await running()) === 0 ? true : undefined), {
      timeoutMs: 30_000,
      what: 'every run record finalized',
    });
    for (const run of ends) assert.equal(run.total_cost, expected.get(run.id), run.id);
    const ledger = await svc.store.collections.ledger.find({ kind: 'run' }).toArray();
    assert.equal(ledger.length, RUNS, 'one debit per run');
    for (const entry of ledger)
      assert.equal(entry.amount_usd, -expected.get(entry.run_id!)!, `debit of ${entry.run_id}`);
    assert.equal(ends.find((r) => r.id === big).output.answers.length, BIG_ROWS);

    // Streams: to [DONE], resumed from the last event id if the connection was cut.
    for (const [runId, sse] of streams) {
      await sse.closed;
      let last = sse;
      for (let tries = 0; last.frames.at(-1)?.data !== '[DONE]' && tries < 5; tries++) {
        last = await openSse(`${svc.url}/api/v1/runs/${runId}/stream`, {
          key,
          headers: { 'Last-Event-ID': String(last.frames.findLast((f) => f.id)?.id ?? 0) },
        });
        await last.closed;
      }
      assert.equal(last.frames.at(-1)?.data, '[DONE]', `stream of ${runId}`);
    }

    // The webhook, once (its delivery may run on any worker).
    await temporalClient(svc).workflow.getHandle(`${hooked}-webhook`).result();
    assert.equal(receiver.hitsOn('/hook').length, 1);

    // No workflow task failed; runs crossed the upgrade.
    let crossed = 0;
    for (const runId of runIds) {
      const history = await temporalClient(svc).workflow.getHandle(runId).fetchHistory();
      const events = history.events ?? [];
      // Except the server's UnhandledCommand: an update or cancel arrived while the task that ends
      // the run (its end a local activity) was under way, so the server asked for a task with it
      // first; the SDK retries at once and counts no failure (no alert fires on it).
      const failed = events.filter(
        (e) =>
          e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED &&
          e.workflowTaskFailedEventAttributes?.cause !== UNHANDLED_COMMAND,
      );
      assert.deepEqual(failed, [], `workflow task failures in ${runId}`);
      const identities = new Set(
        events.flatMap((e) => e.workflowTaskCompletedEventAttributes?.identity ?? []),
      );
      const byOld = [...identities].some((id) => [...oldIdentities].some((p) => id.startsWith(p)));
      if (byOld && identities.size > 1) crossed++;
    }
    // How many cross depends on how many are in flight when the roll begins: 42 on an idle
    // machine, 7–22 beside the suite's other two processes (their starts take 43–60 s, not 14).
    assert.ok(crossed >= 5, `only ${crossed} runs ran on an old and a new worker`);
    console.log(
      `      ${RUNS} runs started in ${startSeconds.toFixed(1)} s; ${inFlightAtRoll} running when the roll began; ` +
        `both workers replaced in ${rollSeconds.toFixed(1)} s; all ended ${endSeconds.toFixed(1)} s after the first start; ` +
        `${crossed} runs crossed the upgrade`,
    );
  });
});
