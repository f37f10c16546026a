/**
 * P3 stream fan-out: N live runs (an llm node against the fake, which holds every call until
 * the benchmark releases them, so every run sits in `running` while the clients attach and a
 * steady state is measured, then emits its item and terminal events), each watched by M SSE
 * clients (`GET /runs/{id}/stream?starting_after=0`) on one API process.
 * Measures Temporal queries per run per second (the API's own RPC counter), the API's RSS
 * (/proc of the child) and the lag from the state change to each client: the state changes
 * when the workflow task that appends the item's `done` event completes (its time in the
 * run's history); the lag from the fake's answer is shown too, and the difference is what
 * Temporal and the worker take to get the answer into the workflow.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { describeRpc, rpcDelta, type BenchContext, type BenchResult } from '../context';
import { fetchEvents, stateChangeAfterActivity } from '../lib/history';
import { keepAliveAgent, openSse, requestJson, type SseStream } from '../lib/http';
import { rssMb } from '../lib/proc';
import { fmt, nowMs, sleep, summarize } from '../lib/stats';

export const STREAM_WORKFLOW = () => ({
  slug: 'bench-stream',
  name: 'Bench: one slow llm call',
  nodes: [
    { id: 'name', type: 'user_input', label: 'Name', input_type: 'text' },
    { id: 'ask', type: 'llm', model: 'fake-model', prompt: 'hold tag:{{name}}' },
    { id: 'answer', type: 'user_result', label: 'Answer' },
  ],
  edges: [
    { from: 'name', to: 'ask', port: 'name' },
    { from: 'ask', to: 'answer' },
  ],
});

async function limit<T>(
  items: T[],
  concurrency: number,
  fn: (item: T, i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

export async function benchStream(ctx: BenchContext): Promise<BenchResult> {
  const { runs, clientsPerRun, steadyMs, releaseSpreadMs } = ctx.sizes.p3;
  const publishAgent = keepAliveAgent(10);
  const published = await requestJson(publishAgent, ctx.apiUrl, 'POST', '/api/v1/workflows', {
    key: ctx.key,
    body: STREAM_WORKFLOW(),
  });
  if (published.status !== 201)
    throw new Error(`publish bench-stream: ${published.status} ${JSON.stringify(published.body)}`);
  await ctx.resetRuns();

  ctx.fake.counts.maxInFlight = 0;
  const rssBefore = rssMb(ctx.api.pid);
  const end = ctx.monitor.begin();
  const tag = randomUUID().slice(0, 6);
  // 1. Start the runs.
  const started: Array<{ runId: string; tag: string }> = [];
  const t0 = nowMs();
  await limit(
    Array.from({ length: runs }, (_, i) => `p3${tag}r${i}`),
    10,
    async (name) => {
      const res = await requestJson(publishAgent, ctx.apiUrl, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'bench-stream', inputs: { name } },
      });
      if (res.status !== 202) throw new Error(`start: ${res.status} ${JSON.stringify(res.body)}`);
      started.push({ runId: res.body.run_id, tag: name });
    },
  );
  const startedMs = nowMs() - t0;
  publishAgent.destroy();
  // Every run's llm call is in flight (and held) before any client attaches.
  for (let i = 0; i < 600 && ctx.fake.held() < runs; i++) await sleep(100);
  if (ctx.fake.held() < runs)
    ctx.log(`P3: only ${ctx.fake.held()}/${runs} llm calls are being held`);

  // 2. Attach the clients, each on its own socket.
  const sseAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const clients: Array<{
    stream: SseStream;
    run: (typeof started)[number];
    openedAt: number;
    firstAt: number;
  }> = [];
  const attachErrors: Record<string, number> = {};
  const t1 = nowMs();
  const wanted = started.flatMap((run) => Array.from({ length: clientsPerRun }, () => run));
  await limit(wanted, 100, async (run) => {
    const openedAt = Date.now();
    try {
      const stream = await openSse(
        sseAgent,
        ctx.apiUrl,
        `/api/v1/runs/${run.runId}/stream?starting_after=0`,
        ctx.key,
      );
      if (stream.status !== 200) throw new Error(`stream answered ${stream.status}`);
      // Wait for response.resumed: the stream is live from here on.
      for (let i = 0; i < 400 && stream.events.length === 0; i++) await sleep(25);
      clients.push({ stream, run, openedAt, firstAt: stream.events[0]?.at ?? NaN });
    } catch (err) {
      const kind = (err as Error).message.slice(0, 120);
      attachErrors[kind] = (attachErrors[kind] ?? 0) + 1;
    }
  });
  const attachMs = nowMs() - t1;
  ctx.log(
    `P3: ${started.length} runs started in ${fmt(startedMs, 0)} ms, ${clients.length} clients attached in ${fmt(attachMs, 0)} ms`,
  );

  // 3. Steady state: every client attached, no answer yet. Count queries over it.
  const steady0 = await ctx.apiStats();
  const s0 = nowMs();
  const steadyRss: number[] = [];
  while (nowMs() < s0 + steadyMs) {
    steadyRss.push(rssMb(ctx.api.pid));
    await sleep(500);
  }
  const steady1 = await ctx.apiStats();
  const steadySeconds = (nowMs() - s0) / 1000;
  const steadyDelta = rpcDelta(steady1, steady0);
  const steadyQueries = steadyDelta.queryWorkflow?.calls ?? 0;
  const livePollers = steady1.pollers;
  const perRunPerSecond = steadySeconds > 0.5 ? steadyQueries / (runs * steadySeconds) : NaN;

  // 4. The state changes: every held call is answered, spread over `releaseSpreadMs`; then wait
  //    until every stream has ended (terminal event and [DONE]).
  ctx.fake.release(releaseSpreadMs);
  const deadline = Date.now() + releaseSpreadMs + 60_000;
  while (Date.now() < deadline && clients.some((c) => !c.stream.done)) await sleep(200);
  const usage = end();
  const allStats = await ctx.apiStats();
  const unfinished = clients.filter((c) => !c.stream.done).length;
  for (const c of clients) c.stream.close();
  sseAgent.destroy();

  // 5. Lag: the state change (history) and the fake's answer → arrival of the item's done event (and the terminal event).
  const changedAt = new Map<string, number>();
  await limit(started, 10, async (run) => {
    const at = stateChangeAfterActivity(
      await fetchEvents(ctx.temporal, run.runId).catch(() => []),
      'runNodeChunk',
    );
    if (at !== undefined) changedAt.set(run.runId, at);
  });
  const intoWorkflow: number[] = [];
  for (const run of started) {
    const answered = ctx.fake.answeredAt.get(run.tag);
    const changed = changedAt.get(run.runId);
    if (answered !== undefined && changed !== undefined) intoWorkflow.push(changed - answered);
  }
  const stateLag: number[] = [];
  const doneLag: number[] = [];
  const terminalLag: number[] = [];
  const attachLatency: number[] = [];
  let missingEvents = 0;
  for (const c of clients) {
    attachLatency.push(c.firstAt - c.openedAt);
    const answered = ctx.fake.answeredAt.get(c.run.tag);
    const done = c.stream.events.find((e) => e.event.type === 'response.output_item.done');
    const terminal = c.stream.events.find((e) => e.event.type === 'response.completed');
    const sequences = c.stream.events.map((e) => e.event.sequence_number).join(',');
    if (sequences !== '0,1,2,3') missingEvents++;
    const changed = changedAt.get(c.run.runId);
    if (changed !== undefined && done) stateLag.push(done.at - changed);
    if (answered === undefined || !done || !terminal) continue;
    doneLag.push(done.at - answered);
    terminalLag.push(terminal.at - answered);
  }
  const lag = summarize(stateLag, 1);
  const lagFromAnswer = summarize(doneLag, 1);
  const answerToState = summarize(intoWorkflow, 1);
  const lagTerminal = summarize(terminalLag, 1);
  const attach = summarize(attachLatency, 1);
  const overallQueries = rpcDelta(allStats, steady0).queryWorkflow?.calls ?? 0;
  const peakRss = usage.peakRssMb.api;
  ctx.log(
    `P3: ${fmt(perRunPerSecond, 2)} queries/run/s, API RSS peak ${fmt(peakRss, 0)} MB, lag p99 ${fmt(lag.p99, 0)} ms (from the answer ${fmt(lagFromAnswer.p99, 0)} ms)`,
  );
  // The count is over a window whose edges cut through poll ticks: one query per run of slack.
  const queryTarget = 1 + 1 / Math.max(1, steadySeconds);

  return {
    id: 'p3',
    title: `P3 — stream fan-out (${clients.length} SSE clients on ${runs} live runs, one API process)`,
    baseline:
      'none in Temporal terms; the fixed targets are the yardstick. Lag = arrival of the item `done` event at the client − completion of the workflow task that appended it (history time); the same from the moment the fake LLM answered is shown as well',
    unit: 'ms',
    rows: [
      {
        case: 'lag: state change in the workflow → `response.output_item.done` at client',
        n: lag.count,
        p50: lag.p50,
        p95: lag.p95,
        p99: lag.p99,
        usage,
      },
      {
        case: 'lag: fake LLM answer → `response.output_item.done` at client',
        n: lagFromAnswer.count,
        p50: lagFromAnswer.p50,
        p95: lagFromAnswer.p95,
        p99: lagFromAnswer.p99,
      },
      {
        case: 'lag: fake LLM answer → `response.completed` at client',
        n: lagTerminal.count,
        p50: lagTerminal.p50,
        p95: lagTerminal.p95,
        p99: lagTerminal.p99,
      },
      {
        case: 'of which: fake answer → state change in the workflow (per run)',
        n: answerToState.count,
        p50: answerToState.p50,
        p95: answerToState.p95,
        p99: answerToState.p99,
        note: 'activity completion + workflow task, in Temporal and the worker',
      },
      {
        case: 'attach: GET …/stream → `response.resumed`',
        n: attach.count,
        p50: attach.p50,
        p95: attach.p95,
        p99: attach.p99,
        note: `${clients.length} clients opened 100 at a time in ${fmt(attachMs / 1000, 1)} s`,
      },
    ],
    verdicts: [
      {
        target: '≤ 1 Temporal query per run per second',
        measured: `${fmt(perRunPerSecond, 3)} (${steadyQueries} queries, ${runs} runs, ${fmt(steadySeconds, 1)} s steady state; window edges allow up to ${fmt(queryTarget, 3)})`,
        met: perRunPerSecond <= queryTarget,
      },
      {
        target: 'API RSS ≤ 256 MB',
        measured: `peak ${fmt(peakRss, 0)} MB (before ${fmt(rssBefore, 0)} MB)`,
        met: peakRss <= 256,
      },
      {
        target: 'p99 lag ≤ 1.2 s',
        measured: `${fmt(lag.p99, 0)} ms from the state change (max ${fmt(lag.max, 0)}); ${fmt(lagFromAnswer.p99, 0)} ms from the LLM's answer`,
        met: lag.p99 <= 1200,
      },
    ],
    details: [
      `- The ${runs} held LLM calls were answered spread over ${fmt(releaseSpreadMs / 1000, 1)} s after a ${fmt(steadyMs / 1000, 0)} s steady state.`,
      `- ${started.length} runs started in ${fmt(startedMs / 1000, 1)} s; ${clients.length}/${wanted.length} clients attached${Object.keys(attachErrors).length ? ` (errors: ${JSON.stringify(attachErrors)})` : ''}; ${unfinished} streams had not ended at the deadline; ${missingEvents} clients did not receive exactly sequences 0,1,2,3.`,
      `- Steady state (all clients attached, no answers yet): ${livePollers} pollers, ${steady1.subscribers} subscribers; Temporal RPCs: ${describeRpc(steadyDelta)}.`,
      `- From the steady state to the last stream's end: ${overallQueries} queries (≈ ${fmt(overallQueries / Math.max(1, runs), 1)} per run); Temporal RPCs: ${describeRpc(rpcDelta(allStats, steady0))}.`,
      `- API RSS: ${fmt(rssBefore, 0)} MB before, ${steadyRss.length ? fmt(Math.max(...steadyRss), 0) : '—'} MB with every client attached, peak ${fmt(peakRss, 0)} MB; heap used ${fmt(allStats.heapUsedMb, 0)} MB at the end.`,
      `- Fake LLM: ${ctx.fake.counts.maxInFlight} requests in flight at most.`,
    ],
  };
}
