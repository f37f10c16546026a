/**
 * P4 batch: a json list of rows → batch → llm (the fake answers after 50 ms) → result, at the
 * workflow's own concurrency (8 for P4, 64 for P4b's 100,000 rows). Wall time is from the POST to
 * the workflow's close (waited for with the load process's own Temporal client, so no polling
 * loads the run), against the ideal rows / concurrency × 50 ms. The history gives the
 * per-activity times and its own size. A big run is also streamed while it runs (every event, in
 * order) and read whole once done, with the API's and the worker's peak RSS reported.
 */
import { WorkflowFailedError } from '@temporalio/client';
import type { BenchContext, BenchResult, Row } from '../context';
import { activityTimings, failuresIn, fetchEvents } from '../lib/history';
import { keepAliveAgent, openSse, requestJson } from '../lib/http';
import { fmt, nowMs, sleep, summarize } from '../lib/stats';

/** An llm call per row; the rows come as a JSON list or, with `rowsFrom: 'file'`, from an uploaded file (P4c). */
export const BATCH_WORKFLOW = (
  fakeMs: number,
  concurrency = 8,
  rowsFrom: 'json' | 'file' = 'json',
) => ({
  slug: `bench-batch-${rowsFrom === 'file' ? 'file-' : ''}c${concurrency}`,
  name: 'Bench: an llm call per row',
  concurrency,
  nodes: [
    { id: 'rows', type: 'user_input', label: 'Rows', input_type: rowsFrom },
    { id: 'each', type: 'batch' },
    { id: 'ask', type: 'llm', model: 'fake-model', prompt: `slow:${fakeMs} {{row}}` },
    { id: 'answers', type: 'user_result', label: 'Answers' },
  ],
  edges: [
    { from: 'rows', to: 'each', port: 'rows' },
    { from: 'each', to: 'ask', port: 'row' },
    { from: 'ask', to: 'answers' },
  ],
});

const HISTORY_EVENT_LIMIT = 20_000; // D35: no history over 20,000 events (Temporal's own limit is 51,200)

export async function benchBatch(ctx: BenchContext): Promise<BenchResult> {
  const { cases, fakeMs, timeoutMs } = ctx.sizes.p4;
  const agent = keepAliveAgent(4);
  for (const concurrency of new Set(cases.map((c) => c.concurrency))) {
    const published = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/workflows', {
      key: ctx.key,
      body: BATCH_WORKFLOW(fakeMs, concurrency),
    });
    if (published.status !== 201)
      throw new Error(`publish bench-batch: ${published.status} ${JSON.stringify(published.body)}`);
  }
  const rows: Row[] = [];
  const verdicts: BenchResult['verdicts'] = [];
  const details: string[] = [];

  for (const { rows: n, concurrency: CONCURRENCY } of cases) {
    await ctx.resetRuns();
    ctx.fake.counts.maxInFlight = 0;
    const answeredBefore = ctx.fake.counts.answered;
    const input = Array.from({ length: n }, (_, i) => `r${i}`); // short rows: 100,000 of them fit the 1 MiB body
    const ideal = (n / CONCURRENCY) * fakeMs;
    const big = n >= 10_000;
    const end = ctx.monitor.begin();
    const t0 = nowMs();
    const res = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: `bench-batch-c${CONCURRENCY}`, inputs: { rows: input } },
    });
    if (res.status !== 202)
      throw new Error(
        `start batch of ${n}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`,
      );
    const runId = res.body.run_id as string;
    // A caller following the big run live: every event must arrive, in order.
    const stream = big
      ? await openSse(agent, ctx.apiUrl, `/api/v1/runs/${runId}/stream?starting_after=0`, ctx.key)
      : undefined;
    const handle = ctx.temporal.workflow.getHandle(runId);
    let outcome: 'closed' | 'failed' | 'timeout' | 'stuck' = 'closed';
    let error = '';
    let timer: NodeJS.Timeout | undefined;
    let watching = true;
    // A workflow task that keeps failing (e.g. a payload over a limit) retries forever: stop waiting once it has failed a few times.
    const watchdog = (async () => {
      while (watching) {
        await sleep(5_000);
        if (!watching) return;
        const d = await handle.describe().catch(() => undefined);
        if ((d?.raw.pendingWorkflowTask?.attempt ?? 0) >= 3) throw new Error('stuck');
      }
    })();
    try {
      await Promise.race([
        handle.result(),
        watchdog,
        new Promise(
          (_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs)),
        ),
      ]);
    } catch (err) {
      if (err instanceof WorkflowFailedError) {
        outcome = 'failed';
        error = `${err.message}${err.cause ? `: ${err.cause.message}` : ''}`;
      } else if ((err as Error).message === 'timeout' || (err as Error).message === 'stuck') {
        outcome = (err as Error).message as 'timeout' | 'stuck';
      } else {
        outcome = 'failed';
        error = (err as Error).message;
      }
    } finally {
      watching = false;
      clearTimeout(timer);
    }
    void watchdog.catch(() => undefined);
    const wall = nowMs() - t0;
    const description = await handle.describe().catch(() => undefined);
    const events = await fetchEvents(ctx.temporal, runId).catch(() => []);
    const timings = activityTimings(events);
    const failures = failuresIn(events);
    const historyLength = description?.historyLength ?? events.length;
    const historySize = description?.historySize;
    const status = description?.status.name ?? 'unknown';
    const taskAttempts = description?.raw.pendingWorkflowTask?.attempt ?? 0;

    // What a caller sees: the whole run in one GET, and (big runs) the stream that followed it.
    if (stream) await Promise.race([stream.closed, sleep(120_000)]);
    const tGet = nowMs();
    const view = await requestJson(agent, ctx.apiUrl, 'GET', `/api/v1/runs/${runId}`, {
      key: ctx.key,
    });
    const getMs = nowMs() - tGet;
    // Same-run baseline: the bare store read of the run's record and chunks that the GET streams from.
    const tBare = nowMs();
    if (big) {
      await ctx.store.collections.runs.findOne({ _id: runId });
      await ctx.store.collections.runChunks.find({ run_id: runId }).sort({ index: 1 }).toArray();
    }
    const bareMs = nowMs() - tBare;
    const usage = end();
    const answers = (view.body?.output?.answers ?? []) as Array<{ status: string }>;
    const completedItems = answers.filter((a) => a.status === 'completed').length;
    const ok = outcome === 'closed' && view.body?.status === 'completed' && completedItems === n;
    if ((outcome === 'timeout' || outcome === 'stuck') && description?.status.name === 'RUNNING') {
      await handle.terminate('benchmark timeout').catch(() => undefined);
    }

    const s2s = summarize(timings.scheduleToStart, 1);
    const s2c = summarize(timings.startToClose, 1);
    const ratio = wall / ideal;
    const calls = ctx.fake.counts.answered - answeredBefore;
    rows.push({
      case: `${n} rows: POST → workflow closed`,
      n: 1,
      throughput: ok ? (n / wall) * 1000 : undefined,
      ratio: ok ? ratio : undefined,
      usage,
      note: ok
        ? `wall ${fmt(wall / 1000, 2)} s vs ideal ${fmt(ideal / 1000, 2)} s; history ${historyLength} events${historySize ? `, ${fmt(historySize / 2 ** 20, 2)} MB` : ''}`
        : `**did not complete**: ${
            outcome === 'timeout'
              ? `still ${status} after ${fmt(timeoutMs / 1000, 0)} s`
              : outcome === 'stuck'
                ? `${status}, its workflow task failing (attempt ${taskAttempts}) after ${fmt(wall / 1000, 0)} s; terminated by the benchmark`
                : status
          }; history ${historyLength} events${historySize ? `, ${fmt(historySize / 2 ** 20, 2)} MB` : ''}; ${completedItems}/${n} items`,
    });
    rows.push({
      case: `${n} rows: activity scheduled → started`,
      n: s2s.count,
      p50: s2s.p50,
      p95: s2s.p95,
      p99: s2s.p99,
      note: 'Temporal matching + worker pickup, per row',
    });
    rows.push({
      case: `${n} rows: activity started → completed`,
      n: s2c.count,
      p50: s2c.p50,
      p95: s2c.p95,
      p99: s2c.p99,
      note: `the fake answers in ${fakeMs} ms`,
    });
    if (stream) {
      stream.close();
      const seq = stream.events
        .map((e) => e.event.sequence_number as number)
        .filter((x) => typeof x === 'number');
      const inOrder = seq.every((x, i) => i === 0 || x === seq[i - 1] + 1);
      const itemEvents = stream.events.filter((e) =>
        String(e.event.type).startsWith('response.output_item.'),
      ).length;
      const rss = `API peak RSS ${fmt(usage.peakRssMb.api, 0)} MB, worker peak RSS ${fmt(usage.peakRssMb.worker, 0)} MB`;
      rows.push({
        case: `${n} rows: GET of the finished run (every item, streamed JSON)`,
        n: 1,
        p50: getMs,
        ratio: getMs / bareMs,
        note: `${rss}; largest history of the run's workflows ${historyLength} events; ratio against the bare store read of its record and chunks (${fmt(bareMs, 0)} ms)`,
      });
      details.push(
        `- ${n} rows: the live stream got ${itemEvents} item events (${2 * n} expected), ${inOrder ? 'in order with no gap' : '**out of order or with gaps**'}, ${stream.done ? 'then [DONE]' : '**no [DONE]**'}; GET took ${fmt(getMs, 0)} ms; ${rss}.`,
      );
      verdicts.push({
        target: `${n} rows: the stream carries all ${2 * n} item events in order`,
        measured: `${itemEvents}, ${inOrder ? 'in order' : 'out of order'}`,
        met: itemEvents === 2 * n && inOrder,
      });
      verdicts.push({
        target: `${n} rows: GET of the run ≤ 3 s`,
        measured: `${fmt(getMs / 1000, 2)} s; the bare store read of its record and chunks alone takes ${fmt(bareMs / 1000, 2)} s`,
        met: getMs <= 3_000,
      });
      verdicts.push({
        target: `${n} rows: worker RSS ≤ 1 GB, API RSS ≤ 512 MB`,
        measured: rss,
        met: usage.peakRssMb.worker <= 1024 && usage.peakRssMb.api <= 512,
      });
    }
    const perSlot = (wall * CONCURRENCY) / Math.max(1, calls);
    details.push(
      `- ${n} rows: ${calls} LLM calls, at most ${ctx.fake.counts.maxInFlight} in flight; ${timings.workflowTasks} workflow tasks; each of the ${CONCURRENCY} slots spent ${fmt(perSlot, 1)} ms per row (${fmt(perSlot - fakeMs, 1)} ms over the fake's ${fakeMs} ms); projected history for this graph ≈ ${fmt(historyLength / n, 2)} events per row.`,
    );
    if (failures.length || error)
      details.push(
        `- ${n} rows: ${[error, ...failures]
          .filter(Boolean)
          .map((f) => `\`${f.slice(0, 400)}\``)
          .join('; ')}`,
      );
    if (!big) {
      verdicts.push({
        target: `P4: ${n} rows at c=${CONCURRENCY}: wall ≤ 1.3× ideal (${fmt((ideal * 1.3) / 1000, 2)} s)`,
        measured: ok ? `${fmt(ratio, 2)}× (${fmt(wall / 1000, 2)} s)` : 'did not complete',
        met: ok && ratio <= 1.3,
      });
    } else {
      verdicts.push({
        target: `P4b: ${n} rows at c=${CONCURRENCY} complete in ≤ 2× ideal (${fmt((ideal * 2) / 1000, 1)} s), history ≤ ${HISTORY_EVENT_LIMIT} events`,
        measured: ok
          ? `completed in ${fmt(wall / 1000, 1)} s (${fmt(ratio, 2)}× ideal), ${historyLength} events${historySize ? `, ${fmt(historySize / 2 ** 20, 1)} MB` : ''}`
          : `did not complete (${status}, ${historyLength} events)`,
        met: ok && ratio <= 2 && historyLength <= HISTORY_EVENT_LIMIT,
      });
    }
    ctx.log(
      `P4 ${n} rows: ${ok ? 'completed' : `NOT completed (${outcome}, ${status})`} in ${fmt(wall / 1000, 2)} s (ideal ${fmt(ideal / 1000, 2)} s), ${historyLength} events`,
    );
  }
  agent.destroy();
  return {
    id: 'p4',
    title: `P4 — batch through an llm node (fake answers in ${fakeMs} ms; P4b: 100,000 rows at concurrency 64)`,
    baseline: `the ideal wall time rows / concurrency × ${fakeMs} ms; ratio = wall / ideal`,
    unit: 'ms',
    rows,
    verdicts,
    details,
  };
}
