/**
 * The Temporal server goes away while runs are in flight (a crash, SIGKILL, and a
 * graceful stop, SIGTERM) and comes back on the same SQLite file and port. On a private stack
 * (the shared one serves the other test files): ten runs wait on a slow provider call when the
 * server goes. While it is down the API answers at once: starts and reads of live runs get the
 * 503 envelope, /readyz stays ready and reports Temporal unavailable, /healthz is ok, an open stream keeps its keepalives, and a
 * new stream opens and waits. Nothing hangs or crashes. After the restart, with nobody touching
 * anything, the API and the worker reconnect by themselves, and every run completes with its
 * own output and exactly one debit. docs/outages.md describes the behaviour this test pins down.
 */
import assert from 'node:assert/strict';
import { startTemporal } from '../../tools/stack';
import { storedLog } from '../support/runs';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/definitions';
import { runsEnded } from '../../lib/metrics';
import { call } from '../support/http';
import { events, openSse } from '../support/sse';
import {
  allFinalized,
  assertEnvelope,
  assertOneDebitEach,
  assertOwnAnswers,
  awaitRecovery,
  completedRuns,
  endedCount,
  startRunsInFlight,
  timed,
  usePrivateStack,
} from './outage-support';

const RUNS = 10;
/**
 * The provider answers after this long: the server dies while every run waits on its call, and the
 * answers come while it is down. Room for a graceful stop (~1 s) after a setup slowed by a busy
 * machine: at 2.5 s a run could end before the server was gone (its stream then ended with it).
 */
const PROVIDER_DELAY_MS = 4_000;
/** "Quickly": every answer while Temporal is down, measured from request to full response. */
const DOWN_ANSWER_BOUND_MS = 3_000;
const KEEPALIVE_MS = 300;

describe('reliability: Temporal restart with runs in flight', function () {
  this.timeout(150_000);
  const stack = usePrivateStack('temporal-restart', {
    STREAM_KEEPALIVE_MS: String(KEEPALIVE_MS),
    RETRY_INITIAL_MS: '200',
  });

  // SIGKILL (a crash: nothing flushed, connections reset) and a graceful stop (a deploy), in turn on one service.
  it('answers 503 at once while Temporal is down (SIGKILL), then recovers by itself and finishes every run once', () =>
    outage('kill'));
  it('the same after a graceful stop (SIGTERM)', () => outage('stop'));

  async function outage(how: 'kill' | 'stop'): Promise<void> {
    const { svc: s, fake, streams } = stack;
    const c = s.store.collections;
    const { accountId, key, runIds, endedBefore, callsBefore, calledAt } = await startRunsInFlight(
      stack,
      RUNS,
      PROVIDER_DELAY_MS,
    );
    // Every run's provider call is in flight, and the API knows the runs as running.
    const live = await call(s.url, 'GET', `/api/v1/runs/${runIds[0]}`, { key });
    assert.equal(live.body.status, 'running', JSON.stringify(live.body));
    const before = await openSse(`${s.url}/api/v1/runs/${runIds[0]}/stream?starting_after=0`, {
      key,
    });
    streams.push(before);
    await before.until((f) => f.event?.type === 'response.resumed');

    const t = stack.temporal!;
    const port = Number(t.address.split(':')[1]);
    const stopAt = Date.now();
    await (how === 'kill' ? t.kill() : t.stop());
    stack.temporal = undefined;
    const downAt = Date.now();

    // While it is down: each answer within the bound, measured.
    const down: Record<string, number> = {};
    const start = await timed(() =>
      call(s.url, 'POST', '/api/v1/responses', {
        key,
        body: { workflowId: 'ask', inputs: { topic: 'refused' } },
      }),
    );
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

    // Still ready: reads served from MongoDB go on; Temporal's state is in the body.
    const ready = await timed(() => call(s.url, 'GET', '/readyz'));
    down.readyz = ready.ms;
    assert.equal(ready.value.status, 200);
    assert.equal(ready.value.body.temporal, 'unavailable');
    const health = await timed(() => call(s.url, 'GET', '/healthz'));
    down.healthz = health.ms;
    assert.equal(health.value.status, 200);

    // A new stream opens at once (200 and the SSE head) and waits with keepalives for the run's state.
    const during = await timed(() =>
      openSse(`${s.url}/api/v1/runs/${runIds[1]}/stream?starting_after=0`, { key }),
    );
    down.newStreamHead = during.ms;
    streams.push(during.value);
    assert.equal(during.value.status, 200);
    await during.value.until((f) => f.comment === 'keepalive', 5_000);
    assert.equal(
      events(during.value).length,
      0,
      'no event before the run state is known: the stored record only says pending',
    );
    // The stream opened before the outage is still alive: keepalives keep coming after the kill.
    await before.until((f) => f.comment === 'keepalive' && f.at > downAt + KEEPALIVE_MS, 5_000);

    for (const [what, ms] of Object.entries(down))
      assert.ok(ms < DOWN_ANSWER_BOUND_MS, `${what} answered in ${ms} ms while Temporal was down`);
    // The refused start left no run behind.
    assert.equal(await c.runs.countDocuments({ account_id: accountId }), RUNS);
    // The provider's answers were due while the server was down: their results must still reach the runs.
    assert.ok(
      Date.now() > calledAt + PROVIDER_DELAY_MS + 1_000,
      'the outage outlasted the provider calls',
    );
    assert.equal(
      await endedCount(runsEnded, 'completed'),
      endedBefore,
      'no run could be finalized while the server was down',
    );
    const outageMs = Date.now() - downAt;

    // Back on the same file and port; nothing else is touched.
    const restart = await timed(() =>
      startTemporal({
        dataDir: t.dataDir,
        port,
        headless: true,
        searchAttributes: SEARCH_ATTRIBUTE_TYPES,
      }),
    );
    stack.temporal = restart.value;
    const upAt = Date.now();

    const recovered = await awaitRecovery(s.url, key, runIds, upAt);

    // The worker reconnected by itself: every run, the one started after the restart too, completes.
    await allFinalized(c, accountId, runIds.length, 90_000);
    const allDoneMs = Date.now() - upAt;
    const runs = await completedRuns(s.url, key, runIds, 10_000);
    assertOwnAnswers(runs, RUNS, PROVIDER_DELAY_MS);
    // Exactly one debit per run, of its cost; the record was finalized once per run.
    const debits = await assertOneDebitEach(c, accountId, runIds, endedBefore);

    // Both streams delivered the rest of their run once it was reachable again, each event once and
    // in order (the stored log after event 0, as asked), then [DONE]. The one opened during the
    // outage announced the live status, not the record's stale `pending`.
    for (const [n, stream] of [before, during.value].entries()) {
      await stream.closed;
      const got = events(stream);
      assert.equal(got[0].type, 'response.resumed');
      // Live: `running`, or `completed` when the run ended before the stream's first successful look.
      assert.ok(
        ['running', 'completed'].includes(got[0].response.status),
        `stream ${n}: ${JSON.stringify(got[0])}`,
      );
      const log = await storedLog(c, runIds[n]);
      assert.deepEqual(
        got.slice(1),
        log.slice(1),
        `stream ${n}: the run's log after event 0, each event once`,
      );
      assert.equal(got.at(-1).type, 'response.completed');
      assert.equal(stream.frames.at(-1)!.data, '[DONE]');
    }
    const providerCalls = fake.requests.length - callsBefore;

    console.log(
      `      temporal restart (${how}): ${RUNS} runs in flight; stop took ${downAt - stopAt} ms; down ${outageMs} ms; answers while down (ms) ${JSON.stringify(down)}; ` +
        `restart ${restart.ms} ms; recovered after restart: read ${recovered.read} ms, start ${recovered.start} ms, readyz ${recovered.readyz} ms; ` +
        `all ${runIds.length} runs finalized ${allDoneMs} ms after restart; provider calls ${providerCalls}; debits ${debits.length}`,
    );
  }
});
