/**
 * P2 end-to-end latency, one run at a time: the 3-node hello workflow from `POST /responses`
 * to its terminal state, against `client.workflow.execute` of the bare workflow (start, then
 * long-poll the result). The service is measured both ways a client can wait: `Prefer: wait`
 * (D28) when the API honours it — the mode the target is judged on — and polling GET every
 * 50 ms. Iterations alternate so every mode sees the same server state. The service's own view
 * of the run (completed_at − created_at) separates server-side time from what waiting adds.
 */
import { randomUUID } from 'node:crypto';
import { BARE_TASK_QUEUE, BARE_WORKFLOW_TYPE } from '../baseline/constants';
import { describeRpc, rpcDelta, type BenchContext, type BenchResult, type Row } from '../context';
import { keepAliveAgent, requestJson } from '../lib/http';
import { fmt, nowMs, sleep, summarize } from '../lib/stats';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const BODY = { workflowId: 'hello', inputs: { name: 'Ada' } };

function checkRun(view: any): void {
  if (view.status !== 'completed') throw new Error(`run ${view.status}: ${view.error}`);
  if (view.output?.greeting?.[0]?.parts?.[0]?.text !== 'Hello, Ada!')
    throw new Error(`unexpected output ${JSON.stringify(view.output)}`);
}

export async function benchLatency(ctx: BenchContext): Promise<BenchResult> {
  const { iterations, warmup, pollMs } = ctx.sizes.p2;
  const agent = keepAliveAgent(2);
  const tag = randomUUID().slice(0, 8);
  const errorKinds: Record<string, number> = {};
  const samples = {
    bare: [] as number[],
    wait: [] as number[],
    poll: [] as number[],
    server: [] as number[],
    gets: [] as number[],
  };
  const errors = { wait: 0, poll: 0 };

  const runBare = async (i: number) => {
    const t0 = nowMs();
    await ctx.temporal.workflow.execute(BARE_WORKFLOW_TYPE, {
      taskQueue: BARE_TASK_QUEUE,
      workflowId: `bare-e2e-${tag}-${i}`,
      args: [{ name: 'Ada' }],
    });
    return nowMs() - t0;
  };
  /** POST with `Prefer: wait=10`: null when the API does not honour it (202). */
  const runWait = async () => {
    const t0 = nowMs();
    const res = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: BODY,
      headers: { prefer: 'wait=10' },
    });
    const elapsed = nowMs() - t0;
    if (res.status === 202) return null;
    if (res.status !== 200 || !TERMINAL.has(res.body.status))
      throw new Error(`POST with Prefer: wait answered ${res.status}`);
    checkRun(res.body);
    return { elapsed, server: Date.parse(res.body.completed_at) - Date.parse(res.body.created_at) };
  };
  const runPoll = async () => {
    const t0 = nowMs();
    const started = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: BODY,
    });
    if (started.status !== 202) throw new Error(`POST answered ${started.status}`);
    const runId = started.body.run_id as string;
    for (let polls = 1; ; polls++) {
      await sleep(pollMs);
      const res = await requestJson(agent, ctx.apiUrl, 'GET', `/api/v1/runs/${runId}`, {
        key: ctx.key,
      });
      if (res.status !== 200) throw new Error(`GET answered ${res.status}`);
      if (TERMINAL.has(res.body.status)) {
        const elapsed = nowMs() - t0;
        checkRun(res.body);
        return {
          elapsed,
          polls,
          server: Date.parse(res.body.completed_at) - Date.parse(res.body.created_at),
        };
      }
      if (polls > 400) throw new Error(`run ${runId} not terminal after ${polls} polls`);
    }
  };
  const noteError = (err: unknown) => {
    const kind = (err as Error).message.slice(0, 160);
    errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
  };

  await ctx.resetRuns();
  const waitSupported = (await runWait()) !== null;
  for (let i = 0; i < warmup; i++) {
    await runBare(-i - 1);
    await runPoll();
    if (waitSupported) await runWait();
  }
  await ctx.waitIdle();
  const before = await ctx.apiStats();
  const end = ctx.monitor.begin();
  for (let i = 0; i < iterations; i++) {
    samples.bare.push(await runBare(i));
    if (waitSupported) {
      try {
        const w = (await runWait())!;
        samples.wait.push(w.elapsed);
        samples.server.push(w.server);
      } catch (err) {
        errors.wait++;
        noteError(err);
      }
    }
    try {
      const p = await runPoll();
      samples.poll.push(p.elapsed);
      samples.gets.push(p.polls);
      if (!waitSupported) samples.server.push(p.server);
    } catch (err) {
      errors.poll++;
      noteError(err);
    }
  }
  const usage = end();
  const after = await ctx.apiStats();
  agent.destroy();

  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const b = summarize(samples.bare, sum(samples.bare));
  const w = summarize(samples.wait, sum(samples.wait), errors.wait);
  const p = summarize(samples.poll, sum(samples.poll), errors.poll);
  const srv = summarize(samples.server, 1);
  const judged = waitSupported ? w : p;
  const ratio = judged.p50 / b.p50;
  ctx.log(
    `P2: service p50 ${fmt(judged.p50)} ms (${waitSupported ? 'Prefer: wait' : 'polling'}), bare p50 ${fmt(b.p50)} ms (×${fmt(ratio, 2)}); polling p50 ${fmt(p.p50)} ms`,
  );
  const rows: Row[] = [
    {
      case: 'bare client.workflow.execute',
      n: b.count,
      p50: b.p50,
      p95: b.p95,
      p99: b.p99,
      throughput: b.throughput,
    },
  ];
  if (waitSupported) {
    rows.push({
      case: 'service: POST with `Prefer: wait=10` (D28)',
      n: w.count,
      p50: w.p50,
      p95: w.p95,
      p99: w.p99,
      throughput: w.throughput,
      ratio: w.p50 / b.p50,
      errors: errors.wait,
      usage,
    });
  }
  rows.push({
    case: `service: POST, then GET every ${pollMs} ms until terminal`,
    n: p.count,
    p50: p.p50,
    p95: p.p95,
    p99: p.p99,
    throughput: p.throughput,
    ratio: p.p50 / b.p50,
    errors: errors.poll,
    usage: waitSupported ? undefined : usage,
  });
  rows.push({
    case: "service's own view: completed_at − created_at",
    n: srv.count,
    p50: srv.p50,
    p95: srv.p95,
    p99: srv.p99,
    ratio: srv.p50 / b.p50,
    note: `of the ${waitSupported ? 'Prefer: wait' : 'polled'} runs; workflow clock minus API clock, ms resolution`,
  });
  const mode = waitSupported ? 'with Prefer: wait' : `polling every ${pollMs} ms`;
  return {
    id: 'p2',
    title: 'P2 — end-to-end latency (hello: input → text → result)',
    baseline: `\`client.workflow.execute\` of the bare workflow from the load process (start + long-poll of the result), alternating with the service run by run; ratio = service p50 / bare p50, judged ${mode}`,
    unit: 'ms per run',
    rows,
    verdicts: [
      {
        target: 'p50 ≤ 1.2× bare',
        measured: `${fmt(ratio, 2)}× (${fmt(judged.p50)} vs ${fmt(b.p50)} ms, ${mode})`,
        met: ratio <= 1.2,
      },
      {
        target: 'p50 < 100 ms',
        measured: `${fmt(judged.p50)} ms (${mode})`,
        met: judged.p50 < 100,
      },
    ],
    details: [
      `- \`Prefer: wait\` ${waitSupported ? 'is honoured (200 with the finished run)' : 'is not honoured (202): the service was measured by polling only'}.`,
      `- GETs per polled run: mean ${fmt(sum(samples.gets) / Math.max(1, samples.gets.length), 2)} (the first GET goes out ${pollMs} ms after the 202).`,
      `- Temporal RPCs made by the API over the measured runs: ${describeRpc(rpcDelta(after, before))}. MongoDB: ${describeRpc(rpcDelta(after, before, 'mongo'))}.`,
      ...(Object.keys(errorKinds).length
        ? [`- service errors: ${JSON.stringify(errorKinds)}`]
        : []),
    ],
  };
}
