/**
 * P1 start throughput: async `POST /api/v1/responses` of examples/hello.json at concurrency
 * 1, 8, 32 against bare `client.workflow.start` of the equivalent hand-written workflow on the
 * same Temporal server. Bare and service phases alternate per concurrency, and the backlog of
 * started runs drains between phases. Workers stay up: starting runs also means running them.
 */
import { randomUUID } from 'node:crypto';
import type { RunDoc } from '../../../store/documents';
import { generateId } from '../../../store/ids';
import { recordRunEnd } from '../../../store/run-end';
import { RunWrites } from '../../../store/run-writes';
import { deleteAll } from '../lib/delete-all';
import { RateCounter } from '../../../api/limits/rate-counter';
import type { RunFinal } from '../../../domain/run';
import { SEARCH_ATTRIBUTES } from '../../../workflows/definitions';
import { workflowDetails, workflowSummary } from '../../../workflows/summaries';
import { priorityKey } from '../../../domain/run-priority';
import { BARE_TASK_QUEUE, BARE_WORKFLOW_TYPE } from '../baseline/constants';
import {
  describeRpc,
  rpcDelta,
  summaryRow,
  type BenchContext,
  type BenchResult,
  type Idle,
  type Row,
} from '../context';
import { keepAliveAgent, requestJson } from '../lib/http';
import type { PhaseUsage } from '../lib/proc';
import { closedLoop, fmt } from '../lib/stats';

export async function benchStart(ctx: BenchContext): Promise<BenchResult> {
  const { concurrencies, durationMs, warmupMs, drainMs, rounds } = ctx.sizes.p1;
  const drained = (idle: Idle) =>
    idle.running > 0
      ? `${idle.initial} runs still running after the phase; ${idle.running} left after ${fmt(idle.waitedMs / 1000, 0)} s`
      : `${idle.initial} runs still running after the phase finished in ${fmt(idle.waitedMs / 1000, 1)} s`;
  const rows: Row[] = [];
  const details: string[] = [];
  const body = { workflowId: 'hello', inputs: { name: 'Ada' } };
  const tag = randomUUID().slice(0, 8);
  const at32: Array<{ bare: number; service: number }> = []; // one pair per round
  let serviceRunId: string | undefined; // one service run, whose start the options control copies

  await ctx.resetRuns();
  // The pair at c=32 is repeated: on these shared cores one pair's ratio moves ±10% on the same code.
  const phases = concurrencies.flatMap((c) =>
    Array.from({ length: c === 32 ? rounds : 1 }, (_, i) => ({
      c,
      label: c === 32 && rounds > 1 ? `c=${c}, round ${i + 1} of ${rounds}` : `c=${c}`,
    })),
  );
  for (const { c, label } of phases) {
    // Bare Temporal start.
    let whole = ctx.monitor.begin(); // the phase and its drain: every started run's whole cost
    let end = ctx.monitor.begin();
    let bareStarted = 0;
    const bare = await closedLoop({ concurrency: c, durationMs, warmupMs }, async (w, seq) => {
      await ctx.temporal.workflow.start(BARE_WORKFLOW_TYPE, {
        taskQueue: BARE_TASK_QUEUE,
        workflowId: `bare-${tag}-${c}-${w}-${seq}`,
        args: [{ name: 'Ada' }],
      });
      bareStarted++;
    });
    const bareUsage = end();
    const bareDrain = await ctx.resetRuns(drainMs);
    const bareCpu = cpuPerRun(whole(), bareStarted);
    rows.push(
      summaryRow(`bare client.workflow.start, ${label}`, bare, {
        usage: bareUsage,
        note: `${drained(bareDrain)}; ${bareCpu}`,
      }),
    );
    ctx.log(`P1 bare ${label}: ${fmt(bare.throughput)}/s p50 ${fmt(bare.p50)} ms`);

    // The service.
    const agent = keepAliveAgent(c);
    const before = await ctx.apiStats();
    const workerBefore = await ctx.workerStats();
    whole = ctx.monitor.begin();
    end = ctx.monitor.begin();
    let serviceStarted = 0;
    const service = await closedLoop({ concurrency: c, durationMs, warmupMs }, async () => {
      const res = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body,
      });
      if (res.status !== 202)
        throw new Error(
          `POST /responses answered ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`,
        );
      serviceRunId ??= (res.body as { run_id?: string }).run_id;
      serviceStarted++;
    });
    const serviceUsage = end();
    const after = await ctx.apiStats();
    agent.destroy();
    const serviceDrain = await ctx.resetRuns(drainMs);
    const serviceCpu = cpuPerRun(whole(), serviceStarted);
    const workerAfter = await ctx.workerStats();
    const ratio = service.throughput / bare.throughput;
    rows.push(
      summaryRow(`service POST /responses (async), ${label}`, service, {
        ratio,
        usage: serviceUsage,
        note: `${drained(serviceDrain)}; ${serviceCpu}`,
      }),
    );
    details.push(
      `- ${label}, service phase (${service.count + service.errors} POSTs): Temporal RPCs by the API: ${describeRpc(rpcDelta(after, before))}. ` +
        `MongoDB by the API: ${describeRpc(rpcDelta(after, before, 'mongo'))}. MongoDB by the worker (finalizeRun of these runs, during the phase and the drain after it): ${describeRpc(rpcDelta(workerAfter, workerBefore, 'mongo'))}.`,
    );
    if (service.errors)
      details.push(`- ${label}: service errors: ${JSON.stringify(service.errorKinds)}`);
    if (bare.errors) details.push(`- ${label}: bare errors: ${JSON.stringify(bare.errorKinds)}`);
    ctx.log(
      `P1 service ${label}: ${fmt(service.throughput)}/s p50 ${fmt(service.p50)} ms (×${fmt(ratio, 2)} of bare)`,
    );
    if (c === 32) at32.push({ bare: bare.throughput, service: service.throughput });
  }
  // The verdict's round: the median ratio (its bare throughput is the controls' reference).
  const sorted = [...at32].sort((a, b) => a.service / a.bare - b.service / b.bare);
  const median = sorted[Math.floor(sorted.length / 2)] ?? { bare: NaN, service: NaN };
  const bareAt32 = median.bare;
  const serviceAt32 = median.service;

  // What Temporal itself charges for the three search attributes the service sets on every run.
  const top = Math.max(...concurrencies);
  const end = ctx.monitor.begin();
  const withSa = await closedLoop({ concurrency: top, durationMs, warmupMs }, async (w, seq) => {
    await ctx.temporal.workflow.start(BARE_WORKFLOW_TYPE, {
      taskQueue: BARE_TASK_QUEUE,
      workflowId: `bare-sa-${tag}-${w}-${seq}`,
      args: [{ name: 'Ada' }],
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.accountId, value: ctx.accountId },
        { key: SEARCH_ATTRIBUTES.publishedWorkflowId, value: 'wf_bench' },
        { key: SEARCH_ATTRIBUTES.workflowVersion, value: 1 },
      ],
    });
  });
  rows.push(
    summaryRow(`bare start + the service's 3 search attributes, c=${top}`, withSa, {
      usage: end(),
      note: `control: what the search attributes alone cost; ${drained(await ctx.resetRuns(drainMs))}`,
    }),
  );

  // What Temporal charges for the rest of the service's start options: the search attributes, the
  // static summary and details (D33), the priority and fairness key (D36), and a start argument of
  // the size of a service run's (its graph and options, sealed by the codec, D32), read from the
  // history of one run of the service phase. Still the bare workflow, so no finalize.
  const argBytes = serviceRunId ? await startArgBytes(ctx, serviceRunId) : 0;
  const endOptions = ctx.monitor.begin();
  const withOptions = await closedLoop(
    { concurrency: top, durationMs, warmupMs },
    async (w, seq) => {
      await ctx.temporal.workflow.start(BARE_WORKFLOW_TYPE, {
        taskQueue: BARE_TASK_QUEUE,
        workflowId: `bare-opt-${tag}-${w}-${seq}`,
        args: [{ name: 'Ada', pad: 'x'.repeat(Math.max(0, argBytes - 40)) }],
        staticSummary: workflowSummary('hello', 1),
        staticDetails: workflowDetails([
          { type: 'user_input' },
          { type: 'text' },
          { type: 'user_result' },
        ]),
        priority: { priorityKey: priorityKey('normal'), fairnessKey: ctx.accountId },
        typedSearchAttributes: [
          { key: SEARCH_ATTRIBUTES.accountId, value: ctx.accountId },
          { key: SEARCH_ATTRIBUTES.publishedWorkflowId, value: 'wf_bench' },
          { key: SEARCH_ATTRIBUTES.workflowVersion, value: 1 },
        ],
      });
    },
  );
  rows.push(
    summaryRow(
      `bare start with the service's start options (search attributes, summary, details, priority, a ${argBytes}-byte argument), c=${top}`,
      withOptions,
      {
        usage: endOptions(),
        note: `control: what the service's start options cost on their own; ${drained(await ctx.resetRuns(drainMs))}`,
      },
    ),
  );

  // Control: an HTTP hop alone. A bare node:http server in a process of its own (the baseline
  // child) that only calls workflow.start: what any service in front of Temporal pays on these two
  // shared cores before it does anything of its own (tools/bench/baseline/http-start.ts).
  const hopAgent = keepAliveAgent(top);
  const endHop = ctx.monitor.begin();
  const hop = await closedLoop({ concurrency: top, durationMs, warmupMs }, async (w, seq) => {
    const res = await requestJson(hopAgent, ctx.bareHttpUrl, 'POST', '/', {
      body: { id: `bare-http-${tag}-${w}-${seq}`, name: 'Ada' },
    });
    if (res.status !== 202) throw new Error(`bare HTTP start answered ${res.status}`);
  });
  hopAgent.destroy();
  rows.push(
    summaryRow(
      `control: bare HTTP start (node:http in its own process, JSON body, workflow.start, 202; nothing else), c=${top}`,
      hop,
      {
        ratio: hop.throughput / bareAt32,
        usage: endHop(),
        note: `the floor of any HTTP service on this machine (its CPU is \`base\`); ratio vs bare start; ${drained(await ctx.resetRuns(drainMs))}`,
      },
    ),
  );

  // Control: the store writes one run costs in steady state (the round-trip budget: the run's insert
  // at start; its final record and its debit at finalize), through the same store functions and
  // the same group commit as the API and the worker (store/run-writes.ts), from the load process,
  // without the API or Temporal. On FerretDB's single SQLite writer this is how many runs per
  // second the store can carry through to their end, whatever the service does.
  const c = ctx.store.collections;
  const writes = new RunWrites(c);
  const controlAccount = `acct_bench_control_${tag}`;
  const controlRun = (runId: string, createdAt: number) =>
    ({
      _id: runId,
      account_id: controlAccount,
      key_id: 'key_bench_control',
      published_workflow_id: 'wf_bench_control',
      published_workflow_version_id: 'wfv_bench_control',
      version: 1,
      status: 'pending',
      inputs: { name: 'Ada' },
      created_at: new Date(createdAt),
      completed_at: null,
      output: null,
      error: null,
      total_cost: null,
      events: null,
      finalized: false,
      webhook: null,
    }) as RunDoc;
  const endControl = ctx.monitor.begin();
  const storeOnly = await closedLoop({ concurrency: top, durationMs, warmupMs }, async () => {
    const runId = generateId('run');
    const createdAt = Date.now();
    await writes.insertRun(controlRun(runId, createdAt));
    await recordRunEnd(c, helloFinal(runId, controlAccount, createdAt), 'finalize', writes);
  });
  const grouped = writes.stats;
  rows.push(
    summaryRow(
      `control: one run's store writes alone (insert, final record, debit, group-committed; no API, no Temporal), c=${top}`,
      storeOnly,
      {
        ratio: storeOnly.throughput / bareAt32,
        usage: endControl(),
        note: 'complete runs per second the store alone takes (every run costs the API and the worker these three writes); the service starts faster than this only because finalize writes queue up behind the starts and drain after the phase; ratio vs bare start',
      },
    ),
  );
  await deleteAll(c.runs, { account_id: controlAccount });
  // Control: a start's own store writes alone (the run's insert and its share of the D16 count,
  // through the API's group commit), with no finalize writes competing: the store's start ceiling.
  const counter = new RateCounter(c);
  const startOnly = new RunWrites(c);
  const endStarts = ctx.monitor.begin();
  const startWrites = await closedLoop({ concurrency: top, durationMs, warmupMs }, async () => {
    await counter.count('key_bench_control', 'starts', Number.MAX_SAFE_INTEGER); // limits are out of the way here
    await startOnly.insertRun(controlRun(generateId('run'), Date.now()));
  });
  rows.push(
    summaryRow(
      `control: a start's store writes alone (D16 count, run insert, group-committed; no finalize, no API, no Temporal), c=${top}`,
      startWrites,
      {
        ratio: startWrites.throughput / bareAt32,
        usage: endStarts(),
        note: 'starts per second the store alone takes when nothing else writes; ratio vs bare start',
      },
    ),
  );
  details.push(
    `- Group commit in the store controls (store/run-writes.ts), writes per command: run inserts ${perCommand(startOnly.stats.runInserts)} (${perCommand(grouped.runInserts)} in the complete-run control), debits ${perCommand(grouped.entryInserts)}, final records ${perCommand(grouped.runEnds)}.`,
  );
  await deleteAll(c.rateLimits, { key_id: 'key_bench_control' });
  await deleteAll(c.runs, { account_id: controlAccount });
  await deleteAll(c.ledger, { account_id: controlAccount });

  const ratio32 = serviceAt32 / bareAt32;
  return {
    id: 'p1',
    title: 'P1 — start throughput',
    baseline:
      'bare `client.workflow.start` of `bareHello` (tools/bench/baseline/workflows.ts: input → template → result) from the load process on the same Temporal server, same concurrency; ratio = service throughput / bare throughput',
    unit: 'ms per start',
    rows,
    verdicts: concurrencies.includes(32)
      ? [
          {
            target: '≥ 0.8× bare throughput at c=32',
            measured: `${fmt(ratio32, 2)}× (${fmt(serviceAt32)} vs ${fmt(bareAt32)} starts/s${at32.length > 1 ? `, the median of ${at32.length} rounds: ${at32.map((r) => `${fmt(r.service / r.bare, 2)}×`).join(', ')}` : ''}); a bare HTTP start takes ${fmt(hop.throughput)} (${fmt(hop.throughput / bareAt32, 2)}×), the store alone ${fmt(startWrites.throughput)} starts/s (${fmt(startWrites.throughput / bareAt32, 2)}×) and ${fmt(storeOnly.throughput)} complete runs/s`,
            met: ratio32 >= 0.8,
          },
        ]
      : [],
    details,
  };
}

/**
 * CPU milliseconds per started run over a phase and its drain (every run it started has ended):
 * Temporal's, and all of ours (API, workers, Temporal, FerretDB). Unlike throughput this hardly
 * moves with other tenants of the machine, so it compares the work a run costs across runs.
 */
function cpuPerRun(usage: PhaseUsage, runs: number): string {
  const ms = (name: string) =>
    ((usage.cores[name] ?? 0) * usage.seconds * 1000) / Math.max(1, runs);
  const ours = ['api', 'worker', 'baseline', 'temporal', 'ferretdb'];
  // Each process's share too (worker: the run worker or, for bare runs, the baseline's), so a change
  // to one of them shows in its own column rather than only in the total.
  const worker = ms('worker') + ms('baseline');
  return `CPU per run incl. drain: Temporal ${fmt(ms('temporal'), 2)} ms, all services ${fmt(
    ours.reduce((sum, n) => sum + ms(n), 0),
    2,
  )} ms (worker ${fmt(worker, 2)}, API ${fmt(ms('api'), 2)}, FerretDB ${fmt(ms('ferretdb'), 2)}; ${runs} runs, other load ${fmt(usage.cores.other ?? 0, 2)} cores)`;
}

/** The bytes of a run's start argument as Temporal stores it (sealed by the codec): its first event's input. */
async function startArgBytes(ctx: BenchContext, runId: string): Promise<number> {
  const history = await ctx.temporal.workflow.getHandle(runId).fetchHistory();
  const payloads =
    history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
  return payloads.reduce((sum, p) => sum + (p.data?.length ?? 0), 0);
}

/** "12.3 (40 commands)": how many writes a group commit carried per command. */
function perCommand(stats: { batches: number; items: number }): string {
  return `${fmt(stats.items / Math.max(1, stats.batches), 1)} (${stats.batches} commands)`;
}

/** The final state of a finished hello run (one result item, the four events of its log), as finalizeRun stores it. */
function helloFinal(runId: string, accountId: string, createdAtMs: number): RunFinal {
  const item = {
    type: 'message' as const,
    id: `item_${runId.slice(4)}`,
    phase: 'final_answer' as const,
  };
  return {
    runId,
    accountId,
    status: 'completed',
    output: {
      greeting: [
        {
          id: item.id,
          item_index: 0,
          status: 'completed',
          parts: [{ type: 'text', text: 'Hello, Ada!' }],
        },
      ],
    },
    error: null,
    totalCost: 0.001,
    completedAtMs: createdAtMs + 50,
    events: [
      {
        type: 'response.created',
        sequence_number: 0,
        response: {
          id: runId,
          run_id: runId,
          created_at: Math.floor(createdAtMs / 1000),
          workflow_id: 'wf_bench_control',
          service_tier: null,
        },
      },
      { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item },
      { type: 'response.output_item.done', sequence_number: 2, output_index: 0, item },
      {
        type: 'response.completed',
        sequence_number: 3,
        response: { usage: null, service_tier: null },
      },
    ],
  };
}
