/**
 * The database (FerretDB, spoken to with the MongoDB driver) stops while runs are in
 * flight and comes back on the same data directory and port, after a graceful stop and after a
 * crash. On a private stack: ten runs wait on a slow provider call when it goes, and end while
 * it is down, so every finalize (the record and the debit, activities/finalize.ts) meets the
 * outage. While it is down every request that needs the database answers the 503 envelope
 * within the driver's server-selection timeout (2 s, store/db.ts) instead of the driver's
 * default 30 s, /readyz is not ready, /healthz ok, and a stream that was open before keeps
 * delivering what Temporal knows. After the restart, with nobody touching anything, the API
 * and the worker use the database again, each finalize writes its record once and each run has
 * exactly one debit. docs/outages.md describes the behaviour.
 */
import assert from 'node:assert/strict';
import { startFerretDb } from '../../tools/stack';
import { storedLog } from '../support/runs';
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
 * The provider answers after this long: the database is gone (a graceful stop takes ~3 s) while
 * every run waits on its call, and the runs end while it is down.
 */
const PROVIDER_DELAY_MS = 8_000;
/** "Quickly": the 2 s server selection plus one retried read, on a busy 2-core machine. */
const DOWN_ANSWER_BOUND_MS = 5_000;
const TERMINAL = new Set(['response.completed', 'response.failed', 'response.cancelled']);

describe('reliability: FerretDB restart with runs in flight', function () {
  this.timeout(150_000);
  const stack = usePrivateStack('ferretdb-restart', { STREAM_KEEPALIVE_MS: '300' });

  // A graceful stop (SIGTERM: FerretDB serves open connections for ~3 s more, then exits) and a crash (SIGKILL).
  it('answers 503 within the selection timeout while the database is down (SIGTERM), then finalizes every run once', () =>
    outage('stop'));
  it('the same after a crash (SIGKILL)', () => outage('kill'));

  async function outage(how: 'stop' | 'kill'): Promise<void> {
    const { svc: s, fake, streams } = stack;
    const c = s.store.collections;
    const { accountId, key, runIds, endedBefore, callsBefore, calledAt } = await startRunsInFlight(
      stack,
      RUNS,
      PROVIDER_DELAY_MS,
    );
    const open = await openSse(`${s.url}/api/v1/runs/${runIds[0]}/stream?starting_after=0`, {
      key,
    });
    streams.push(open);
    await open.until((f) => f.event?.type === 'response.resumed');
    const openEnded = open.closed.then(() => Date.now());

    const m = stack.mongo!;
    const port = Number(new URL(m.uri).port);
    // The API's driver notices the outage at its next heartbeat (10 s); from then on a request
    // waits for server selection (2 s here, 30 s with the driver's default) instead of failing on
    // a refused connection at once. Both phases are measured.
    const driverKnows = new Promise<number>((resolve) =>
      s.api.store.client.once('serverHeartbeatFailed', () => resolve(Date.now())),
    );
    const stopAt = Date.now();
    await (how === 'stop' ? m.stop() : m.kill());
    stack.mongo = undefined;
    const downAt = Date.now();
    // Every run still waits on its provider: each finalize will meet the outage.
    assert.equal(
      await endedCount(runsEnded, 'completed'),
      endedBefore,
      'no run ended before the database was gone',
    );

    const first = await answersWhileDown(s.url, key, runIds);
    const knownAfterMs = (await driverKnows) - stopAt;
    const known = await answersWhileDown(s.url, key, runIds);
    for (const [phase, down] of Object.entries({ first, known })) {
      for (const [what, ms] of Object.entries(down)) {
        assert.ok(
          ms < DOWN_ANSWER_BOUND_MS,
          `${what} answered in ${ms} ms while the database was down (${phase})`,
        );
      }
    }

    // The stream opened before needs only Temporal: the run's events, its end and [DONE] arrive while the database is down.
    await open.closed;
    assert.equal(events(open).at(-1).type, 'response.completed');
    assert.equal(open.frames.at(-1)!.data, '[DONE]');
    const streamed = events(open);
    const streamEndedMs = (await openEnded) - downAt;
    // The provider's answers were due while the database was down: every finalize met the outage.
    assert.ok(
      Date.now() > calledAt + PROVIDER_DELAY_MS + 1_000,
      'the outage outlasted the provider calls',
    );
    assert.equal(
      await endedCount(runsEnded, 'completed'),
      endedBefore,
      'no run could be finalized while the database was down',
    );
    const outageMs = Date.now() - downAt;

    const restart = await timed(() => startFerretDb({ dataDir: m.dataDir, port }));
    stack.mongo = restart.value;
    const upAt = Date.now();

    const recovered = await awaitRecovery(s.url, key, runIds, upAt);

    // The worker's finalize retries reach the database again: every record final, by itself.
    await allFinalized(c, accountId, runIds.length, 60_000);
    const allFinalMs = Date.now() - upAt;
    const runs = await completedRuns(s.url, key, runIds, 10_000);
    assertOwnAnswers(runs, RUNS, PROVIDER_DELAY_MS);
    // The stored log of every run ends with exactly one terminal event; the stream had that log (after event 0).
    assert.deepEqual(
      streamed.slice(1),
      (await storedLog(c, runIds[0])).slice(1),
      'the stream saw the stored log',
    );
    for (const runId of runIds) {
      const log = await storedLog(c, runId);
      assert.deepEqual(
        log.filter((e) => TERMINAL.has(e.type)).map((e) => e.sequence_number),
        [log.length - 1],
        `${runId}: one terminal event, the last`,
      );
    }
    const debits = await assertOneDebitEach(c, accountId, runIds, endedBefore);

    console.log(
      `      ferretdb restart (${how}): ${RUNS} runs in flight; stop took ${downAt - stopAt} ms; down ${outageMs} ms; answers while down (ms): at once ${JSON.stringify(first)}, ` +
        `once the driver knew (${knownAfterMs} ms after the stop began) ${JSON.stringify(known)}; ` +
        `open stream ended ${streamEndedMs} ms into the outage; restart ${restart.ms} ms; recovered after restart: read ${recovered.read} ms, ` +
        `start ${recovered.start} ms, readyz ${recovered.readyz} ms; all ${runIds.length} runs finalized ${allFinalMs} ms after restart; ` +
        `provider calls ${fake.requests.length - callsBefore}; debits ${debits.length}`,
    );
  }
});

/** Every kind of request while the database is down, each asserted to be the 503 envelope (or /healthz ok); the time of each. */
async function answersWhileDown(
  url: string,
  key: string,
  runIds: string[],
): Promise<Record<string, number>> {
  const down: Record<string, number> = {};
  const start = await timed(() =>
    call(url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'ask', inputs: { topic: 'refused' } },
    }),
  );
  down.start = start.ms;
  assertEnvelope(start.value, 503, 'service_unavailable');
  assert.ok(start.value.headers.get('retry-after'), 'a 503 says when to retry');
  const read = await timed(() => call(url, 'GET', `/api/v1/runs/${runIds[1]}`, { key }));
  down.read = read.ms;
  assertEnvelope(read.value, 503, 'service_unavailable');
  const stream = await timed(() => openSse(`${url}/api/v1/runs/${runIds[1]}/stream`, { key }));
  down.newStream = stream.ms;
  // The key cannot be checked without the database: a JSON 503 before any byte of a stream.
  assert.equal(stream.value.status, 503);
  assert.equal(stream.value.json?.error?.code, 'service_unavailable');
  const ready = await timed(() => call(url, 'GET', '/readyz'));
  down.readyz = ready.ms;
  assertEnvelope(ready.value, 503, 'service_unavailable');
  assert.equal(ready.value.body.error.message, 'Not ready: MongoDB does not answer.');
  const health = await timed(() => call(url, 'GET', '/healthz'));
  down.healthz = health.ms;
  assert.equal(health.value.status, 200);
  // Several at once do not queue behind each other.
  const burst = await timed(() =>
    Promise.all(runIds.map((id) => call(url, 'GET', `/api/v1/runs/${id}`, { key }))),
  );
  for (const r of burst.value) assertEnvelope(r, 503, 'service_unavailable');
  down.burstOf10Reads = burst.ms;
  return down;
}
