/**
 * P5 reads: `GET /api/v1/runs/{id}` of completed (finalized) runs at 50 concurrent clients,
 * against the baseline of a bare MongoDB `findOne({_id})` (the query store/runs.ts `findRun`
 * makes) of the same records from the load process at the same concurrency. A finalized run is
 * served from MongoDB alone (the key by hash, then the run), so the database's own answer time
 * is the floor the API stands on; the ratio says how much the API adds to it. (An in-process
 * no-op Koa route would only measure Node's HTTP stack, which is not where a read gets slow.)
 * Repeated reads of a finished run come from the API's per-process cache (FINISHED_RUN_CACHE_MS).
 *
 * Then the same reads, each run read once (so none is cached), with the runs collection grown by
 * older filler records (another account's finished runs). `{_id, account_id}` is shown beside
 * it: FerretDB 1.x pushes a filter down to SQLite only when it is `{_id}` alone and scans the
 * collection for anything more, which is why `findRun` checks the account in code.
 */
import { generateId } from '../../../store/ids';
import { describeRpc, rpcDelta, summaryRow, type BenchContext, type BenchResult } from '../context';
import { keepAliveAgent, requestJson } from '../lib/http';
import { addFiller } from '../lib/filler';
import { startHttpFloor } from '../lib/http-floor';
import { closedLoop, fmt, sleep } from '../lib/stats';
import { RateCounter } from '../../../api/limits/rate-counter';

export async function benchReads(ctx: BenchContext): Promise<BenchResult> {
  const { concurrency, durationMs, warmupMs, runs, filler: FILLER } = ctx.sizes.p5;
  const agent = keepAliveAgent(concurrency);
  const runsCollection = ctx.store.collections.runs;
  await ctx.resetRuns();

  // Fresh completed runs, waited for through Temporal (no GET polls them while they end).
  const freshRuns = async (prefix: string): Promise<string[]> => {
    const started: string[] = [];
    for (let i = 0; i < runs; i++) {
      const res = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/responses', {
        key: ctx.key,
        body: { workflowId: 'hello', inputs: { name: `${prefix} ${i}` } },
      });
      if (res.status !== 202)
        throw new Error(`start: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      started.push(res.body.run_id);
    }
    await Promise.all(started.map((id) => ctx.temporal.workflow.getHandle(id).result()));
    await ctx.waitIdle();
    for (let i = 0; i < 50; i++) {
      const done = (
        await runsCollection
          .find({ _id: { $in: started } }, { projection: { finalized: 1 } })
          .toArray()
      ).filter((d) => d.finalized).length;
      if (done === started.length) break;
      await sleep(100);
    }
    return started;
  };
  let ids = await freshRuns('reader');
  const finalized = (
    await runsCollection.find({ _id: { $in: ids } }, { projection: { finalized: 1 } }).toArray()
  ).filter((d) => d.finalized).length;
  const pick = (seq: number) => ids[seq % ids.length];

  // `ops`: stop after that many (the grown collection makes every read slow), without warm-up.
  const opts = (c: number, ms: number, ops?: number) =>
    ops
      ? { concurrency: c, durationMs: 60_000, maxOps: ops }
      : { concurrency: c, durationMs: ms, warmupMs };
  const bareById = (c: number, ms: number, ops?: number) =>
    closedLoop(opts(c, ms, ops), async (_w, seq) => {
      const doc = await runsCollection.findOne({ _id: pick(seq) });
      if (!doc || doc.account_id !== ctx.accountId) throw new Error('record not found');
    });
  const bareAsFindRun = (c: number, ms: number, ops?: number) =>
    closedLoop(opts(c, ms, ops), async (_w, seq) => {
      if (!(await runsCollection.findOne({ _id: pick(seq), account_id: ctx.accountId })))
        throw new Error('record not found');
    });
  const serviceGet = (c: number, ms: number, ops?: number) =>
    closedLoop(opts(c, ms, ops), async (_w, seq) => {
      const res = await requestJson(agent, ctx.apiUrl, 'GET', `/api/v1/runs/${pick(seq)}`, {
        key: ctx.key,
      });
      if (res.status !== 200 || res.body.status !== 'completed')
        throw new Error(`GET answered ${res.status} ${res.body?.status ?? ''}`);
    });

  // 1. As the benchmark asks: the runs collection holds only these runs.
  const size1 = await runsCollection.countDocuments({});
  let end = ctx.monitor.begin();
  const bare = await bareById(concurrency, durationMs);
  const bareUsage = end();
  const withAccount = await bareAsFindRun(concurrency, Math.min(durationMs, 3_000));
  const before = await ctx.apiStats();
  end = ctx.monitor.begin();
  const service = await serviceGet(concurrency, durationMs);
  const usage = end();
  const after = await ctx.apiStats();
  const single = await serviceGet(1, Math.min(durationMs, 3_000));
  const singleBare = await bareById(1, Math.min(durationMs, 3_000));
  const ratio = service.p99 / bare.p99;
  ctx.log(
    `P5 (${size1} runs stored) service GET: p99 ${fmt(service.p99)} ms, ${fmt(service.throughput, 0)}/s; findOne p99 ${fmt(bare.p99)} ms`,
  );

  // 2. The same with FILLER older finished runs (another account's) in the collection, reading
  //    runs started after them, as new runs always are (FerretDB's scan stops at the first match).
  const template = await runsCollection.findOne({ _id: ids[0] });
  const fillerAccount = `acct_bench_filler_${Date.now()}`;
  const filler = await addFiller(ctx.store, template!, {
    count: FILLER,
    tag: `p5${Date.now()}`,
    accountId: fillerAccount,
  });
  ctx.log(`P5: ${FILLER} filler runs inserted in ${fmt(filler.insertMs / 1000, 1)} s`);
  // New runs land behind the fillers; copies of the finished runs with fresh ids stand in for
  // them (finishing real ones here would make every finalize scan the grown collection too).
  // Each pass reads fresh copies, each once, so the service reads MongoDB (nothing cached) like the baseline.
  const copies: string[] = [];
  const lateCopies = async () => {
    const late = ids.map(() => ({ ...template!, _id: generateId('run') }));
    await runsCollection.insertMany(late);
    copies.push(...late.map((d) => d._id));
    ids = late.map((d) => d._id);
  };
  await lateCopies();
  const size2 = await runsCollection.countDocuments({});
  const reads = ids.length;
  const grownSingleBare = await bareById(1, 0, reads);
  const grownSingle = await serviceGet(1, 0, reads);
  const grownWithAccount = await bareAsFindRun(1, 0, 10);
  await lateCopies();
  const grownBare = await bareById(concurrency, 0, reads);
  end = ctx.monitor.begin();
  const grownService = await serviceGet(concurrency, 0, reads);
  const grownUsage = end();
  // Repeated reads with the grown collection: the runs just read, again, for the full duration.
  const grownRepeated = await serviceGet(concurrency, durationMs);
  // Their baseline: the one store operation a cached read still makes, D16's count of the key's
  // window, through the API's own counter (RateCounter: group commit and leases) from the load
  // process, same concurrency.
  const countKey = `key_bench_p5_count_${Date.now()}`;
  const counter = new RateCounter(ctx.store.collections);
  end = ctx.monitor.begin();
  const countOnly = await closedLoop(
    { concurrency, durationMs, warmupMs },
    async () => void (await counter.count(countKey, 'requests', Number.MAX_SAFE_INTEGER)),
  );
  const countUsage = end();
  await ctx.store.collections.rateLimits.deleteMany({ key_id: countKey });
  // And the floor of any Node HTTP service here: a bare server answering the same view's JSON.
  const view = (
    await requestJson(agent, ctx.apiUrl, 'GET', `/api/v1/runs/${ids[0]}`, { key: ctx.key })
  ).body;
  const floorServer = await startHttpFloor(JSON.stringify(view));
  end = ctx.monitor.begin();
  const floor = await closedLoop({ concurrency, durationMs, warmupMs }, async () => {
    const res = await requestJson(agent, floorServer.url, 'GET', `/api/v1/runs/${ids[0]}`, {
      key: ctx.key,
    });
    if (res.status !== 200) throw new Error(`the floor server answered ${res.status}`);
  });
  const floorUsage = end();
  floorServer.stop();
  await filler.remove();
  await runsCollection.deleteMany({ _id: { $in: copies } });
  agent.destroy();
  ctx.log(
    `P5 (${size2} runs stored) service GET: p99 ${fmt(grownService.p99)} ms, ${fmt(grownService.throughput, 0)}/s`,
  );

  return {
    id: 'p5',
    title: `P5 — reads of completed runs (${concurrency} concurrent clients over ${ids.length} runs)`,
    baseline:
      "a bare MongoDB `findOne({_id})` — the query store/runs.ts `findRun` makes — of the same records from the load process at the same concurrency: the floor, since a finalized run is served from MongoDB alone; ratio = service p99 / that findOne p99. (An in-process no-op Koa route was not chosen: it would measure only Node's HTTP stack, which is not where a read gets slow.) `findOne({_id, account_id})` is shown too: FerretDB 1.x scans the collection for it",
    unit: 'ms per request',
    rows: [
      summaryRow(`bare findOne({_id}), c=${concurrency} — ${size1} runs stored`, bare, {
        usage: bareUsage,
      }),
      summaryRow(`service GET /runs/{id}, c=${concurrency} — ${size1} runs stored`, service, {
        ratio,
        usage,
        note: "after its first read a run comes from the API's cache",
      }),
      summaryRow(
        `bare findOne({_id, account_id}), c=${concurrency} — ${size1} runs stored`,
        withAccount,
        {
          note: 'not pushed down to SQLite: a scan',
        },
      ),
      summaryRow(`bare findOne({_id}), c=1 — ${size1} runs stored`, singleBare),
      summaryRow(`service GET /runs/{id}, c=1 — ${size1} runs stored`, single, {
        ratio: single.p99 / singleBare.p99,
      }),
      summaryRow(`bare findOne({_id}), c=${concurrency} — ${size2} runs stored`, grownBare, {
        note: `each of ${reads} runs once`,
      }),
      summaryRow(`service GET /runs/{id}, c=${concurrency} — ${size2} runs stored`, grownService, {
        ratio: grownService.p99 / grownBare.p99,
        usage: grownUsage,
        note: `each of ${reads} runs once: none cached`,
      }),
      summaryRow(
        `service GET /runs/{id} repeated, c=${concurrency} — ${size2} runs stored`,
        grownRepeated,
        {
          ratio: grownRepeated.p99 / floor.p99,
          note: `the same ${reads} runs again: from the API's cache; ratio vs the bare node:http server below`,
        },
      ),
      summaryRow(
        `bare D16 count of one key (the API's group commit and leases), c=${concurrency}`,
        countOnly,
        {
          usage: countUsage,
          note: 'the store operation a cached read still makes, a few times a second under load (api/limits/rate-counter.ts), from the load process: no HTTP, no API',
        },
      ),
      summaryRow(
        `bare node:http server answering the same view from memory, c=${concurrency}`,
        floor,
        {
          usage: floorUsage,
          note: 'the floor of a Node HTTP service on this machine (lib/http-floor.ts): no Koa, no key, no D16 count; its CPU shows as other',
        },
      ),
      summaryRow(`bare findOne({_id}), c=1 — ${size2} runs stored`, grownSingleBare, {
        note: `each of ${reads} runs once`,
      }),
      summaryRow(`service GET /runs/{id}, c=1 — ${size2} runs stored`, grownSingle, {
        ratio: grownSingle.p99 / grownSingleBare.p99,
        note: 'none cached',
      }),
      summaryRow(`bare findOne({_id, account_id}), c=1 — ${size2} runs stored`, grownWithAccount, {
        note: 'a scan of the grown collection; 10 reads',
      }),
    ],
    verdicts: [
      {
        target: `p99 ≤ 20 ms at c=${concurrency}`,
        measured: `${fmt(service.p99)} ms with ${size1} runs stored (${fmt(service.throughput, 0)} reads/s); ${fmt(grownService.p99)} ms with ${size2}`,
        met: service.p99 <= 20,
      },
      {
        target: `repeated reads p99 ≤ 20 ms at c=${concurrency} with ${size2} runs stored`,
        measured: `${fmt(grownRepeated.p99)} ms (${fmt(grownRepeated.throughput, 0)} reads/s); the D16 count alone: p99 ${fmt(countOnly.p99)} ms, ${fmt(countOnly.throughput, 0)}/s; a bare node:http server: p99 ${fmt(floor.p99)} ms, ${fmt(floor.throughput, 0)}/s`,
        met: grownRepeated.p99 <= 20,
      },
      {
        target: `cold reads ≤ 1.1× a bare findOne of the same records, c=${concurrency}, ${size2} runs stored`,
        measured: `${fmt(grownService.p99 / grownBare.p99, 2)}× (p99 ${fmt(grownService.p99)} vs ${fmt(grownBare.p99)} ms); c=1: ${fmt(grownSingle.p99 / grownSingleBare.p99, 2)}×`,
        met: grownService.p99 <= 1.1 * grownBare.p99,
      },
    ],
    details: [
      `- ${finalized}/${ids.length} of the runs read were finalized. Temporal RPCs made by the API during the c=${concurrency} reads: ${describeRpc(rpcDelta(after, before))} (a finalized run needs none). MongoDB operations by the API: ${describeRpc(rpcDelta(after, before, 'mongo'))}.`,
      `- ${FILLER} filler runs inserted into FerretDB (insertMany, batches of 500) in ${fmt(filler.insertMs / 1000, 1)} s.`,
      ...(service.errors ? [`- service errors: ${JSON.stringify(service.errorKinds)}`] : []),
    ],
  };
}
