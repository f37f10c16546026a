/**
 * Issue 8: the Temporal server goes away while runs are in flight (a crash, SIGKILL, and a
 * graceful stop, SIGTERM) and comes back on the same SQLite file and port. On a private stack
 * (the shared one serves the other test files): ten runs wait on a slow provider call when the
 * server goes. While it is down the API answers at once: starts and reads of live runs get the
 * 503 envelope, /readyz is not ready, /healthz is ok, an open stream keeps its keepalives, and a
 * new stream opens and waits. Nothing hangs or crashes. After the restart, with nobody touching
 * anything, the API and the worker reconnect by themselves, and every run completes with its
 * own output and exactly one debit. docs/outages.md describes the behaviour this test pins down.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, startTemporal, type FerretDbServer, type TemporalServer } from '../../tools/stack';
import { findRunRecord } from '../../store/runs';
import { bundleWorkflows } from '../../worker/create-worker';
import { installWorkerRuntime } from '../../worker/runtime';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/definitions';
import { runsEnded } from '../../lib/metrics';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import { newAccount } from '../support/accounts';
import { llmWorkflow, publish } from '../support/fixtures';
import { call, waitFor, type ApiResponse } from '../support/http';
import { events, openSse, type SseClient } from '../support/sse';
import { startService, type TestService } from '../support/service';
import { allFinalized, assertEnvelope, completedRuns, endedCount, expectedRunUsd, timed, topicOf } from './outage-support';

const RUNS = 10;
/** The provider answers after this long: the server dies while every run waits on its call, and the answers come while it is down. */
const PROVIDER_DELAY_MS = 2_500;
/** "Quickly": every answer while Temporal is down, measured from request to full response. */
const DOWN_ANSWER_BOUND_MS = 3_000;
const KEEPALIVE_MS = 300;

describe('reliability: Temporal restart with runs in flight (issue 8)', function () {
  this.timeout(150_000);
  let dataDir: string;
  let temporal: TemporalServer | undefined;
  let mongo: FerretDbServer | undefined;
  let fake: FakeOpenAI;
  let svc: TestService | undefined;
  const streams: SseClient[] = [];

  before(async () => {
    installWorkerRuntime('error'); // the worker's reconnect errors are expected here
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wrs-temporal-restart-'));
    const [stack, bundle] = await Promise.all([startStack({ dataDir, headless: true, searchAttributes: SEARCH_ATTRIBUTE_TYPES }), bundleWorkflows()]);
    ({ temporal, mongo } = stack);
    fake = await startFakeOpenAI();
    svc = await startService({
      stack: { temporalAddress: temporal.address, mongoUri: mongo.uri, bundle },
      env: {
        OPENAI_BASE_URL: fake.baseUrl,
        PRICES: JSON.stringify({ 'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 } }),
        STREAM_KEEPALIVE_MS: String(KEEPALIVE_MS),
        RETRY_INITIAL_MS: '200',
      },
    });
  });

  after(async () => {
    for (const s of streams) s.abort();
    await svc?.close().catch(() => undefined);
    await fake?.close();
    await temporal?.kill();
    await mongo?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  // SIGKILL (a crash: nothing flushed, connections reset) and a graceful stop (a deploy), in turn on one service.
  it('answers 503 at once while Temporal is down (SIGKILL), then recovers by itself and finishes every run once', () => outage('kill'));
  it('the same after a graceful stop (SIGTERM)', () => outage('stop'));

  async function outage(how: 'kill' | 'stop'): Promise<void> {
    const s = svc!;
    const c = s.store.collections;
    const { accountId, key } = await newAccount(c, 10);
    await publish(s.url, key, llmWorkflow('ask'));
    const endedBefore = await endedCount(runsEnded, 'completed');
    const callsBefore = fake.requests.length;

    const runIds: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const res = await call(s.url, 'POST', '/api/v1/responses', { key, body: { workflowId: 'ask', inputs: { topic: topicOf(i, PROVIDER_DELAY_MS) } } });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      runIds.push(res.body.run_id);
    }
    // Every run's provider call is in flight, and the API knows the runs as running.
    await waitFor(async () => (fake.requests.length - callsBefore >= RUNS ? true : undefined), { timeoutMs: 20_000, what: `${RUNS} provider calls` });
    const calledAt = Date.now();
    const live = await call(s.url, 'GET', `/api/v1/runs/${runIds[0]}`, { key });
    assert.equal(live.body.status, 'running', JSON.stringify(live.body));
    const before = await openSse(`${s.url}/api/v1/runs/${runIds[0]}/stream?starting_after=0`, { key });
    streams.push(before);
    await before.until((f) => f.event?.type === 'response.resumed');

    const t = temporal!;
    const port = Number(t.address.split(':')[1]);
    const stopAt = Date.now();
    await (how === 'kill' ? t.kill() : t.stop());
    temporal = undefined;
    const downAt = Date.now();

    // While it is down: each answer within the bound, measured.
    const down: Record<string, number> = {};
    const start = await timed(() => call(s.url, 'POST', '/api/v1/responses', { key, body: { workflowId: 'ask', inputs: { topic: 'refused' } } }));
    down.start = start.ms;
    assertEnvelope(start.value, 503, 'service_unavailable');
    assert.ok(start.value.headers.get('retry-after'), 'a 503 says when to retry');

    const reads: number[] = [];
    for (const runId of runIds) {
      const read = await timed(() => call(s.url, 'GET', `/api/v1/runs/${runId}`, { key }));
      assertEnvelope(read.value, 503, 'service_unavailable');
      reads.push(read.ms);
    }
    down.readMax = Math.max(...reads);

    const ready = await timed(() => call(s.url, 'GET', '/readyz'));
    down.readyz = ready.ms;
    assertEnvelope(ready.value, 503, 'service_unavailable');
    assert.equal(ready.value.body.error.message, 'Not ready: Temporal does not answer.');
    const health = await timed(() => call(s.url, 'GET', '/healthz'));
    down.healthz = health.ms;
    assert.equal(health.value.status, 200);

    // A new stream opens at once (200 and the SSE head) and waits with keepalives for the run's state.
    const during = await timed(() => openSse(`${s.url}/api/v1/runs/${runIds[1]}/stream?starting_after=0`, { key }));
    down.newStreamHead = during.ms;
    streams.push(during.value);
    assert.equal(during.value.status, 200);
    await during.value.until((f) => f.comment === 'keepalive', 5_000);
    assert.equal(events(during.value).length, 0, 'no event before the run state is known: the stored record only says pending');
    // The stream opened before the outage is still alive: keepalives keep coming after the kill.
    await before.until((f) => f.comment === 'keepalive' && f.at > downAt + KEEPALIVE_MS, 5_000);

    for (const [what, ms] of Object.entries(down)) assert.ok(ms < DOWN_ANSWER_BOUND_MS, `${what} answered in ${ms} ms while Temporal was down`);
    // The refused start left no run behind.
    assert.equal(await c.runs.countDocuments({ account_id: accountId }), RUNS);
    // The provider's answers were due while the server was down: their results must still reach the runs.
    assert.ok(Date.now() > calledAt + PROVIDER_DELAY_MS + 1_000, 'the outage outlasted the provider calls');
    assert.equal(await endedCount(runsEnded, 'completed'), endedBefore, 'no run could be finalized while the server was down');
    const outageMs = Date.now() - downAt;

    // Back on the same file and port; nothing else is touched.
    const restart = await timed(() => startTemporal({ dataDir: t.dataDir, port, headless: true, searchAttributes: SEARCH_ATTRIBUTE_TYPES }));
    temporal = restart.value;
    const upAt = Date.now();

    const recoveredRead = await waitFor(
      async () => {
        const r = await call(s.url, 'GET', `/api/v1/runs/${runIds[2]}`, { key });
        return r.status === 200 ? Date.now() - upAt : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: 'reads to recover' },
    );
    let late: ApiResponse | undefined;
    const recoveredStart = await waitFor(
      async () => {
        late = await call(s.url, 'POST', '/api/v1/responses', { key, body: { workflowId: 'ask', inputs: { topic: topicOf(RUNS, 10) } } });
        if (late.status === 202) return Date.now() - upAt;
        assertEnvelope(late, 503, 'service_unavailable');
        return undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: 'starts to recover' },
    );
    runIds.push(late!.body.run_id);
    const ready2 = await waitFor(async () => ((await call(s.url, 'GET', '/readyz')).status === 200 ? Date.now() - upAt : undefined), { timeoutMs: 20_000, intervalMs: 100 });

    // The worker reconnected by itself: every run, the one started after the restart too, completes.
    await allFinalized(c, accountId, runIds.length, 90_000);
    const allDoneMs = Date.now() - upAt;
    const runs = await completedRuns(s.url, key, runIds, 10_000);
    for (const [i, run] of runs.entries()) {
      assert.equal(run.output.answer[0].parts[0].text, `echo: ${topicOf(i, i === RUNS ? 10 : PROVIDER_DELAY_MS)}`, `${run.id} has its own answer`);
      assert.ok(Math.abs(run.total_cost - expectedRunUsd()) < 1e-9, `${run.id} cost ${run.total_cost}: its call counted once`);
    }
    // Exactly one debit per run, of its cost; the record was finalized once per run.
    const debits = await c.ledger.find({ account_id: accountId, kind: 'run' }).toArray();
    assert.deepEqual(debits.map((d) => d.run_id).sort(), [...runIds].sort(), 'one debit per run');
    for (const d of debits) assert.ok(Math.abs(d.amount_usd + expectedRunUsd()) < 1e-9, `debit ${d._id} is ${d.amount_usd}`);
    assert.equal((await endedCount(runsEnded, 'completed')) - endedBefore, runIds.length, 'each final record written once');

    // Both streams delivered the rest of their run once it was reachable again, each event once and
    // in order (the stored log after event 0, as asked), then [DONE]. The one opened during the
    // outage announced the live status, not the record's stale `pending`.
    for (const [n, stream] of [before, during.value].entries()) {
      await stream.closed;
      const got = events(stream);
      assert.equal(got[0].type, 'response.resumed');
      // Live: `running`, or `completed` when the run ended before the stream's first successful look.
      assert.ok(['running', 'completed'].includes(got[0].response.status), `stream ${n}: ${JSON.stringify(got[0])}`);
      const log = (await findRunRecord(c, runIds[n]))!.events!;
      assert.deepEqual(got.slice(1), log.slice(1), `stream ${n}: the run's log after event 0, each event once`);
      assert.equal(got.at(-1).type, 'response.completed');
      assert.equal(stream.frames.at(-1)!.data, '[DONE]');
    }
    const providerCalls = fake.requests.length - callsBefore;

    console.log(
      `      temporal restart (${how}): ${RUNS} runs in flight; stop took ${downAt - stopAt} ms; down ${outageMs} ms; answers while down (ms) ${JSON.stringify(down)}; ` +
        `restart ${restart.ms} ms; recovered after restart: read ${recoveredRead} ms, start ${recoveredStart} ms, readyz ${ready2} ms; ` +
        `all ${runIds.length} runs finalized ${allDoneMs} ms after restart; provider calls ${providerCalls}; debits ${debits.length}`,
    );
  }
});
