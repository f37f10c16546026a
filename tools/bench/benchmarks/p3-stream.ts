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
 * Baseline: the same number of fresh held runs, polled by the load process itself the way an API
 * poller polls (a Temporal query once a second), then answered the same way: the lag of the
 * once-a-second poll alone on this machine, without the API, SSE or HTTP. The service also waits
 * for each run's end (the `awaitEnd` update), and this workflow's item ends with the run, so the
 * service's lag is that wait's and the baseline's is the poll's.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { describeRpc, rpcDelta, type BenchContext, type BenchResult } from '../context';
import { barePoll, type TimedQuery } from '../lib/bare-poller';
import { closedAt, fetchEvents, stateChangeAfterActivity, workflowTaskSpans } from '../lib/history';
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

/** The service's poll interval (STREAM_POLL_MS, default), which the baseline keeps too. */
const POLL_MS = 1_000;
/** How long the baseline's pollers run before the held calls are answered. */
const BARE_STEADY_MS = 3_000;

/** Whether a query began inside one of a run's workflow-task spans. */
function inTask(q: TimedQuery, spans: Array<[number, number]>): boolean {
  return spans.some(([from, to]) => q.at >= from && q.at < to);
}

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
  const tag = randomUUID().slice(0, 6);
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
  // 1. Start the runs; every run's llm call is in flight (and held) before any client attaches.
  const { started, startedMs } = await startHeldRuns(ctx, publishAgent, `p3${tag}r`);
  publishAgent.destroy();

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
  const { changedAt, closedAt: closedAtOf } = await runTimes(ctx, started);
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
  const changeToClose: number[] = [];
  for (const run of started) {
    const changed = changedAt.get(run.runId);
    const closed = closedAtOf.get(run.runId);
    if (changed !== undefined && closed !== undefined) changeToClose.push(closed - changed);
  }
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
  const closeAfterChange = summarize(changeToClose, 1);
  const overallQueries = rpcDelta(allStats, steady0).queryWorkflow?.calls ?? 0;

  // 6. The baseline, on fresh runs of the same shape: the load process polls them itself.
  await ctx.resetRuns();
  const baseline = await benchBarePoll(ctx, tag);
  const bareSummary = summarize(baseline.lag, 1);
  const inTaskSummary = summarize(baseline.queriesInTask, 1);
  const outsideSummary = summarize(baseline.queriesOutside, 1);
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
        ratio: lag.p99 / bareSummary.p99,
        usage,
        note: "ratio: p99 against the baseline below; this workflow's item ends with the run, which the API's pollers also wait for (the awaitEnd update), so the item arrives with the run's end",
      },
      {
        case: `baseline: the once-a-second poll alone, from the load process (${runs} runs, each queried once a second; no wait for the end, no API, SSE or HTTP) → item seen`,
        n: bareSummary.count,
        p50: bareSummary.p50,
        p95: bareSummary.p95,
        p99: bareSummary.p99,
        note: `run after the clients' phase on as many fresh runs, held and released the same way; ${baseline.fromRecord} runs' item was read from the record (workflow already closed)`,
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
        measured: `${fmt(lag.p99, 0)} ms from the state change (max ${fmt(lag.max, 0)}); the same poll without the service: ${fmt(bareSummary.p99, 0)} ms (${fmt(lag.p99 / bareSummary.p99, 2)}×); ${fmt(lagFromAnswer.p99, 0)} ms from the LLM's answer`,
        met: lag.p99 <= 1200,
      },
    ],
    details: [
      `- The ${runs} held LLM calls were answered spread over ${fmt(releaseSpreadMs / 1000, 1)} s after a ${fmt(steadyMs / 1000, 0)} s steady state.`,
      `- ${started.length} runs started in ${fmt(startedMs / 1000, 1)} s; ${clients.length}/${wanted.length} clients attached${Object.keys(attachErrors).length ? ` (errors: ${JSON.stringify(attachErrors)})` : ''}; ${unfinished} streams had not ended at the deadline; ${missingEvents} clients did not receive exactly sequences 0,1,2,3.`,
      `- Steady state (all clients attached, no answers yet): ${livePollers} pollers, ${steady1.subscribers} subscribers; Temporal RPCs: ${describeRpc(steadyDelta)}.`,
      `- From the steady state to the last stream's end: ${overallQueries} queries (≈ ${fmt(overallQueries / Math.max(1, runs), 1)} per run); Temporal RPCs: ${describeRpc(rpcDelta(allStats, steady0))}; MongoDB by the API: ${describeRpc(rpcDelta(allStats, steady0, 'mongo')) || 'none'}.`,
      `- API RSS: ${fmt(rssBefore, 0)} MB before, ${steadyRss.length ? fmt(Math.max(...steadyRss), 0) : '—'} MB with every client attached, peak ${fmt(peakRss, 0)} MB; heap used ${fmt(allStats.heapUsedMb, 0)} MB at the end.`,
      `- Fake LLM: ${ctx.fake.counts.maxInFlight} requests in flight at most.`,
      `- The workflow closed ${fmt(closeAfterChange.p50, 0)} ms after its state change (p50; p99 ${fmt(closeAfterChange.p99, 0)} ms): the finalize activity's two store writes and one more workflow task.`,
      `- The baseline's queries from the release to the item: ${inTaskSummary.count} begun while the run's workflow task was scheduled or running took p50 ${fmt(inTaskSummary.p50, 0)} ms, p99 ${fmt(inTaskSummary.p99, 0)} ms (Temporal holds such a query until the task ends); the other ${outsideSummary.count} took p50 ${fmt(outsideSummary.p50, 0)} ms, p99 ${fmt(outsideSummary.p99, 0)} ms.`,
    ],
  };
}

type StartedRun = { runId: string; tag: string };

/** Starts `ctx.sizes.p3.runs` runs through the API and waits until each one's llm call is held by the fake. */
async function startHeldRuns(
  ctx: BenchContext,
  agent: http.Agent,
  prefix: string,
): Promise<{ started: StartedRun[]; startedMs: number }> {
  const { runs } = ctx.sizes.p3;
  const heldBefore = ctx.fake.held();
  const started: StartedRun[] = [];
  const t0 = nowMs();
  await limit(
    Array.from({ length: runs }, (_, i) => `${prefix}${i}`),
    10,
    async (name) => {
      const res = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'bench-stream', inputs: { name } },
      });
      if (res.status !== 202) throw new Error(`start: ${res.status} ${JSON.stringify(res.body)}`);
      started.push({ runId: res.body.run_id, tag: name });
    },
  );
  const startedMs = nowMs() - t0;
  for (let i = 0; i < 600 && ctx.fake.held() - heldBefore < runs; i++) await sleep(100);
  if (ctx.fake.held() - heldBefore < runs)
    ctx.log(`P3: only ${ctx.fake.held() - heldBefore}/${runs} llm calls are being held`);
  return { started, startedMs };
}

/** From each run's history: when its state changed, when it closed, and its workflow-task spans. */
async function runTimes(
  ctx: BenchContext,
  started: StartedRun[],
): Promise<{
  changedAt: Map<string, number>;
  closedAt: Map<string, number>;
  taskSpans: Map<string, Array<[number, number]>>;
}> {
  const changedAt = new Map<string, number>();
  const closedAtOf = new Map<string, number>();
  const taskSpans = new Map<string, Array<[number, number]>>();
  await limit(started, 10, async (run) => {
    const events = await fetchEvents(ctx.temporal, run.runId).catch(() => []);
    const changed = stateChangeAfterActivity(events, 'runNodeChunk');
    if (changed !== undefined) changedAt.set(run.runId, changed);
    const closed = closedAt(events);
    if (closed !== undefined) closedAtOf.set(run.runId, closed);
    taskSpans.set(run.runId, workflowTaskSpans(events));
  });
  return { changedAt, closedAt: closedAtOf, taskSpans };
}

/**
 * P3's baseline: the same number of held runs, polled by the load process itself (lib/bare-poller.ts)
 * instead of 1,000 SSE clients through one API process, then answered the same way. Its lag is the
 * floor the design has on this machine; its queries show where that time goes.
 */
async function benchBarePoll(
  ctx: BenchContext,
  tag: string,
): Promise<{
  lag: number[];
  queriesInTask: number[];
  queriesOutside: number[];
  fromRecord: number;
}> {
  const { releaseSpreadMs } = ctx.sizes.p3;
  const agent = keepAliveAgent(10);
  const { started } = await startHeldRuns(ctx, agent, `p3${tag}b`);
  agent.destroy();
  const polls = barePoll({
    temporal: ctx.temporal,
    collections: ctx.store.collections,
    runIds: started.map((run) => run.runId),
    pollMs: POLL_MS,
    eventType: 'response.output_item.done',
    deadline: Date.now() + BARE_STEADY_MS + releaseSpreadMs + 60_000,
  });
  await sleep(BARE_STEADY_MS);
  ctx.fake.release(releaseSpreadMs);
  const done = await polls;
  const { changedAt, taskSpans } = await runTimes(ctx, started);
  const out = {
    lag: [] as number[],
    queriesInTask: [] as number[],
    queriesOutside: [] as number[],
    fromRecord: 0,
  };
  for (const poll of done) {
    const changed = changedAt.get(poll.runId);
    if (changed === undefined || poll.seenAt === undefined) continue;
    out.lag.push(poll.seenAt - changed);
    if (poll.fromRecord) out.fromRecord++;
    // Only the queries that could have seen the change, or were under way when it came.
    const spans = taskSpans.get(poll.runId) ?? [];
    for (const q of poll.queries) {
      if (q.at + q.ms < changed) continue;
      (inTask(q, spans) ? out.queriesInTask : out.queriesOutside).push(q.ms);
    }
  }
  return out;
}
