/**
 * P7 the local server keeps working over time (stored data must not slow it): the demo workflow
 * (examples/hello.json) from POST to `completed`, the way `npm start`'s user sees it (POST, then
 * GET every 50 ms until it ends), one run at a time: first with the runs collection as fresh as
 * the bench leaves it, then with FILLER older finished runs of the same account stored (and their
 * ledger debits). Target: at most 2× the fresh time. The filler insert time is reported too:
 * FerretDB inserts slowly.
 */
import type { StoredRunDoc } from '../../../store/documents';
import { describeRpc, rpcDelta, summaryRow, type BenchContext, type BenchResult } from '../context';
import { addFiller } from '../lib/filler';
import { keepAliveAgent, requestJson } from '../lib/http';
import { fmt, nowMs, sleep, summarize } from '../lib/stats';

export async function benchOverTime(ctx: BenchContext): Promise<BenchResult> {
  const iterations = ctx.quick ? 10 : 30;
  const filler = 10_000; // quick too: FerretDB inserts it in seconds (bench P7 details)
  const agent = keepAliveAgent(2);
  await ctx.resetRuns();

  const once = async (name: string): Promise<number> => {
    const t0 = nowMs();
    const res = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'hello', inputs: { name } },
    });
    if (res.status !== 202)
      throw new Error(`start: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    for (;;) {
      const got = await requestJson(agent, ctx.apiUrl, 'GET', `/api/v1/runs/${res.body.run_id}`, {
        key: ctx.key,
      });
      if (got.body?.status === 'completed') return nowMs() - t0;
      if (got.status !== 200 || got.body?.status === 'failed' || got.body?.status === 'cancelled')
        throw new Error(`run: ${got.status} ${got.body?.status}`);
      await sleep(50);
    }
  };
  const measure = async (label: string) => {
    await once(`${label} warm`);
    const samples: number[] = [];
    const t0 = nowMs();
    for (let i = 0; i < iterations; i++) samples.push(await once(`${label} ${i}`));
    return summarize(samples, nowMs() - t0);
  };

  const fresh = await measure('fresh');
  const freshStored = await ctx.store.collections.runs.countDocuments({});
  const template = (await ctx.store.collections.runs.findOne({
    finalized: true,
  })) as StoredRunDoc | null;
  if (!template) throw new Error('no finished run to copy');
  const seeded = await addFiller(ctx.store, template, {
    count: filler,
    tag: `p7${Date.now()}`,
    accountId: ctx.accountId,
    ledger: true,
  });
  ctx.log(`P7: ${filler} runs and debits inserted in ${fmt(seeded.insertMs / 1000, 1)} s`);
  const [apiBefore, workerBefore] = await Promise.all([ctx.apiStats(), ctx.workerStats()]);
  const grown = await measure('grown');
  const [apiAfter, workerAfter] = await Promise.all([ctx.apiStats(), ctx.workerStats()]);
  // The same-run floor FerretDB sets: a bare `_id` lookup of a run among the grown collection.
  const someRun = template._id;
  const bareT0 = nowMs();
  for (let i = 0; i < 5; i++) await ctx.store.collections.runs.findOne({ _id: someRun });
  const bareFindMs = (nowMs() - bareT0) / 5;
  const grownStored = await ctx.store.collections.runs.countDocuments({});
  await seeded.remove();
  agent.destroy();

  const ratio = grown.p50 / fresh.p50;
  ctx.log(
    `P7 POST → completed p50: ${fmt(fresh.p50)} ms fresh, ${fmt(grown.p50)} ms with ${grownStored} runs stored (${fmt(ratio, 2)}×)`,
  );
  return {
    id: 'p7',
    title: 'P7 — the demo workflow over time: POST → completed, fresh store vs many runs stored',
    baseline:
      'the same sequence on the fresh store of the same run (the bench deletes finished runs before each benchmark); ratio = p50 grown / p50 fresh',
    unit: 'ms per run',
    rows: [
      summaryRow(`hello, POST → completed (GET every 50 ms) — ${freshStored} runs stored`, fresh),
      summaryRow(`hello, POST → completed (GET every 50 ms) — ${grownStored} runs stored`, grown, {
        ratio,
        note: `${filler} older finished runs of the account and their ledger debits`,
      }),
    ],
    verdicts: [
      {
        target: `≤ 2× the fresh store with ${filler} runs stored`,
        measured: `${fmt(ratio, 2)}× (p50 ${fmt(grown.p50)} vs ${fmt(fresh.p50)} ms)`,
        met: ratio <= 2,
      },
    ],
    details: [
      `- Inserting ${filler} run records and ${filler} ledger entries into FerretDB (insertMany, batches of 500) took ${fmt(seeded.insertMs / 1000, 1)} s.`,
      `- With ${grownStored} runs stored, a bare \`runs.findOne({_id})\` from the load process took ${fmt(bareFindMs)} ms (mean of 5): FerretDB 1.x scans the collection for it.`,
      `- Store operations during the grown phase (${iterations + 1} runs; avg time each): API ${describeRpc(rpcDelta(apiAfter, apiBefore, 'mongo'))}; worker ${describeRpc(rpcDelta(workerAfter, workerBefore, 'mongo'))}.`,
    ],
  };
}
