/**
 * P4c (D35): a million rows. A JSON Lines file of 1,000,000 short rows is uploaded and fed to
 * batch → llm (the fake answers after 50 ms) at concurrency 64. Out of the default run (about a
 * quarter of an hour): `npm run bench -- --only p4c`. Measured: that it completes, its rows per
 * second against the ideal rows × 50 ms / concurrency, its history (bytes, events), and the API's
 * and the worker's peak RSS. Then REPLAYS streams read the finished run's whole log at once, from
 * its first event: every one of its two million item events, in order, with the API's peak RSS
 * meanwhile (the log stays compact in the API, domain/run-log.ts).
 */
import type { BenchContext, BenchResult, Row } from '../context';
import { keepAliveAgent, openSse, requestJson } from '../lib/http';
import { fmt, nowMs } from '../lib/stats';
import { publishFresh, startRun, uploadRows } from '../lib/setup';
import { awaitClose } from '../lib/workflow-close';
import { BATCH_WORKFLOW } from './p4-batch';

const HISTORY_BYTES_LIMIT = 10 * 2 ** 20; // Temporal warns from 10 MB
const HISTORY_EVENTS_LIMIT = 20_000;
/** Streams that replay the finished run at once. */
const REPLAYS = 3;

/** REPLAYS streams of the finished run from its first event, each counting its item events and whether they came in order. */
async function replay(ctx: BenchContext, runId: string) {
  const agent = keepAliveAgent(REPLAYS);
  const t0 = nowMs();
  const streams = await Promise.all(
    Array.from({ length: REPLAYS }, async () => {
      const seen = { items: 0, next: 1, ordered: true };
      const stream = await openSse(
        agent,
        ctx.apiUrl,
        `/api/v1/runs/${runId}/stream?starting_after=0`,
        ctx.key,
        (event) => {
          if (typeof event.sequence_number !== 'number' || event.type === 'response.resumed')
            return;
          if (event.sequence_number !== seen.next) seen.ordered = false;
          seen.next = event.sequence_number + 1;
          if (String(event.type).startsWith('response.output_item.')) seen.items++;
        },
      );
      await stream.closed;
      return { ...seen, done: stream.done };
    }),
  );
  agent.destroy();
  return { streams, ms: nowMs() - t0 };
}

export async function benchMillion(ctx: BenchContext): Promise<BenchResult> {
  const { rows: n, concurrency, fakeMs, timeoutMs } = ctx.sizes.p4c;
  const agent = keepAliveAgent(4);
  const doc = BATCH_WORKFLOW(fakeMs, concurrency, 'file');
  await publishFresh(ctx, agent, doc);

  function* shortRows() {
    for (let i = 0; i < n; i++) yield `row ${i}`;
  }
  const file = await uploadRows(ctx, shortRows());

  const answeredBefore = ctx.fake.counts.answered;
  const ideal = (n * fakeMs) / concurrency;
  const end = ctx.monitor.begin();
  const t0 = nowMs();
  const runId = await startRun(ctx, agent, doc.slug, { rows: file.id });
  const handle = ctx.temporal.workflow.getHandle(runId);
  const outcome = await awaitClose(handle, timeoutMs);
  const wall = nowMs() - t0;
  const usage = end();
  const description = await handle.describe().catch(() => undefined);
  const historyBytes = description?.historySize ?? NaN;
  const historyEvents = description?.historyLength ?? NaN;
  // The run record, once finalized: its status.
  let status = 'unknown';
  for (let attempt = 0; attempt < 30 && outcome === 'closed'; attempt++) {
    const run = await requestJson(agent, ctx.apiUrl, 'GET', `/api/v1/runs/${runId}`, {
      key: ctx.key,
    }).catch(() => undefined);
    status = String(run?.body?.status ?? 'unknown');
    if (['completed', 'failed', 'cancelled'].includes(status)) break;
    await new Promise((r) => setTimeout(r, 2_000));
  }
  agent.destroy();
  const ok = outcome === 'closed' && status === 'completed';
  const replayed = ctx.monitor.begin();
  const replays = ok ? await replay(ctx, runId) : undefined;
  const replayUsage = replayed();
  const calls = ctx.fake.counts.answered - answeredBefore;
  const rowsPerSecond = (n / wall) * 1000;
  const api = usage.peakRssMb.api;
  const worker = usage.peakRssMb.worker;
  const rows: Row[] = [
    {
      case: `${n} file rows → llm: POST → workflow closed`,
      n: 1,
      throughput: ok ? rowsPerSecond : undefined,
      ratio: ok ? wall / ideal : undefined,
      usage,
      note: `wall ${fmt(wall / 1000, 1)} s vs ideal ${fmt(ideal / 1000, 1)} s; ${calls} calls; run ${status}; history ${historyEvents} events, ${fmt(historyBytes / 2 ** 20, 2)} MB; upload of ${fmt(file.bytes / 2 ** 20, 1)} MB`,
    },
  ];
  const replayedAll =
    replays?.streams.every((s) => s.items === 2 * n && s.ordered && s.done) ?? false;
  if (replays)
    rows.push({
      case: `${REPLAYS} streams replay the finished run from its first event`,
      n: REPLAYS,
      throughput: (REPLAYS * 2 * n) / (replays.ms / 1000),
      usage: replayUsage,
      note: `${fmt(replays.ms / 1000, 1)} s; item events ${replays.streams.map((s) => s.items).join(', ')}; events/s over all streams`,
    });
  const verdicts: BenchResult['verdicts'] = [
    {
      target: `P4c: ${n} file rows through one llm node at c=${concurrency} complete (rows/s reported; ideal ${fmt(ideal / 1000, 0)} s)`,
      measured: ok
        ? `${fmt(wall / 1000, 1)} s, ${fmt(rowsPerSecond, 0)} rows/s (${fmt(wall / ideal, 2)}× ideal)`
        : `did not complete (${outcome}, run ${status})`,
      met: ok,
    },
    {
      target: `P4c: history ≤ 10 MB and ≤ ${HISTORY_EVENTS_LIMIT} events`,
      measured: `${fmt(historyBytes / 2 ** 20, 2)} MB, ${historyEvents} events`,
      met: historyBytes <= HISTORY_BYTES_LIMIT && historyEvents <= HISTORY_EVENTS_LIMIT,
    },
    {
      target: 'P4c: worker and API peak RSS ≤ 512 MB each',
      measured: `API ${fmt(api, 0)} MB, worker ${fmt(worker, 0)} MB`,
      met: api <= 512 && worker <= 512,
    },
    {
      target: `P4c: ${REPLAYS} streams at once replay all ${2 * n} item events of the finished run in order, API peak RSS ≤ 512 MB`,
      measured: replays
        ? `${replayedAll ? 'all, in order' : `NOT all in order (${JSON.stringify(replays.streams)})`} in ${fmt(replays.ms / 1000, 1)} s, API ${fmt(replayUsage.peakRssMb.api, 0)} MB`
        : 'not run (the run did not complete)',
      met: replayedAll && replayUsage.peakRssMb.api <= 512,
    },
  ];
  ctx.log(
    `P4c ${n} file rows: ${ok ? 'completed' : `NOT completed (${outcome}, run ${status})`} in ${fmt(wall / 1000, 1)} s (${fmt(rowsPerSecond, 0)} rows/s, ideal ${fmt(ideal / 1000, 1)} s), history ${historyEvents} events / ${fmt(historyBytes / 2 ** 20, 2)} MB, peak RSS API ${fmt(api, 0)} MB, worker ${fmt(worker, 0)} MB`,
  );
  return {
    id: 'p4c',
    title: `P4c — a file of ${n} short rows through one llm node (the fake answers in ${fakeMs} ms, concurrency ${concurrency})`,
    baseline: `the ideal rows × ${fakeMs} ms / concurrency; ratio = wall / ideal`,
    unit: 'ms',
    rows,
    verdicts,
    details: [],
  };
}
