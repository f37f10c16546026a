/**
 * P6 store round trips per operation (the budget of docs/architecture.md "Store round trips"), counted with the MongoDB driver's command
 * monitoring in the API and worker children (tools/bench/server.ts): every command each process sends,
 * by command and collection. Operations run one at a time in a warm process, so each count is
 * that operation's own. The budget (docs/architecture.md "Store round trips"):
 *   start          ≤ 1 write (the run) + the shared rate-limit write, 0 reads;
 *   finalize       ≤ 2 writes (+1 per extra chunk of a big run) and no read (the run's D17 hold,
 *                  given back with its debit, comes with its start argument), counted in the
 *                  worker per run (the worker's D39 secret read of the run counts here too);
 *   repeated GET   0 (a finished run read before in this process), besides the rate-limit write;
 *   live GET       0 (the workflow's query answers), besides the rate-limit write.
 * A key's D6 check (its secret's hash and its record, read again once the process's 2-second
 * memory of it has lapsed, api/auth/key-cache.ts) is a cost of the key per 2 s, not of an
 * operation: counted apart like the rate-limit write, so a phase that happens to cross the
 * lapse does not read as a budget missed.
 */
import type { BenchContext, BenchResult, Row, Verdict } from '../context';
import { keepAliveAgent, requestJson } from '../lib/http';
import { fmt, sleep } from '../lib/stats';
import { STREAM_WORKFLOW } from './p3-stream';

type Counts = Record<string, number>;

const RATE_LIMIT = 'findAndModify rate_limits';
const WRITES = /^(insert|update|delete|findAndModify) /;
const KEY_CHECKS = new Set(['find api_key_hashes', 'find api_keys']);

function delta(after: Counts, before: Counts): Counts {
  const out: Counts = {};
  for (const [name, n] of Object.entries(after))
    if (n - (before[name] ?? 0) > 0) out[name] = n - (before[name] ?? 0);
  return out;
}

/** Per-operation figures of a delta over `ops` operations. */
function perOp(counts: Counts, ops: number) {
  let writes = 0;
  let reads = 0;
  let rateLimit = 0;
  let keyChecks = 0;
  for (const [name, n] of Object.entries(counts)) {
    if (name === RATE_LIMIT) rateLimit += n;
    else if (KEY_CHECKS.has(name)) keyChecks += n;
    else if (WRITES.test(name)) writes += n;
    else reads += n;
  }
  const list = Object.entries(counts)
    .map(([name, n]) => `${name} ×${fmt(n / ops, 2)}`)
    .join(', ');
  return {
    writes: writes / ops,
    reads: reads / ops,
    rateLimit: rateLimit / ops,
    keyChecks: keyChecks / ops,
    list: list || 'none',
  };
}

export async function benchRoundTrips(ctx: BenchContext): Promise<BenchResult> {
  const ops = ctx.quick ? 5 : 20;
  const agent = keepAliveAgent(4);
  await ctx.resetRuns();
  const post = async (workflowId: string, inputs: object) => {
    const res = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId, inputs },
    });
    if (res.status !== 202)
      throw new Error(`start: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    return res.body.run_id as string;
  };
  const get = async (runId: string) => {
    const res = await requestJson(agent, ctx.apiUrl, 'GET', `/api/v1/runs/${runId}`, {
      key: ctx.key,
    });
    if (res.status !== 200) throw new Error(`GET: ${res.status}`);
    return res.body.status as string;
  };
  const apiCommands = async () => (await ctx.apiStats()).commands;
  const workerCommands = async () => (await ctx.workerStats()).commands;

  // Warm: the key, the workflow and its version, the account's credit are known to the API.
  await ctx.temporal.workflow.getHandle(await post('hello', { name: 'warm' })).result();

  // Start, one at a time.
  let before = await apiCommands();
  const workerBefore = await workerCommands();
  const started: string[] = [];
  for (let i = 0; i < ops; i++) started.push(await post('hello', { name: `p6 ${i}` }));
  const start = perOp(delta(await apiCommands(), before), ops);

  // Finalize: the worker's commands for these runs, from start to closed workflow.
  await Promise.all(started.map((id) => ctx.temporal.workflow.getHandle(id).result()));
  await ctx.waitIdle();
  const finalize = perOp(delta(await workerCommands(), workerBefore), ops);

  // Repeated GET of a finished run: read once, then counted.
  for (const id of started) await get(id);
  before = await apiCommands();
  for (const id of started) await get(id);
  const repeated = perOp(delta(await apiCommands(), before), ops);

  // Live GET: runs held in `running` by the fake LLM; started here, so this process knows them.
  const publish = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/workflows', {
    key: ctx.key,
    body: STREAM_WORKFLOW(),
  });
  if (publish.status !== 201) throw new Error(`publish: ${publish.status}`);
  const live: string[] = [];
  for (let i = 0; i < ops; i++) live.push(await post('bench-stream', { name: `p6live${i}` }));
  for (let i = 0; i < 600 && ctx.fake.held() < ops; i++) await sleep(100);
  for (const id of live)
    for (let i = 0; i < 100 && (await get(id)) !== 'running'; i++) await sleep(100);
  before = await apiCommands();
  for (const id of live) await get(id);
  const liveGet = perOp(delta(await apiCommands(), before), ops);
  ctx.fake.release();
  await Promise.all(live.map((id) => ctx.temporal.workflow.getHandle(id).result()));
  agent.destroy();

  const row = (label: string, figures: ReturnType<typeof perOp>, note: string): Row => ({
    case: `${label}: ${fmt(figures.writes, 2)} writes + ${fmt(figures.rateLimit, 2)} rate-limit, ${fmt(figures.reads, 2)} reads`,
    n: ops,
    note: `${note}; per operation: ${figures.list}`,
  });
  const verdict = (
    target: string,
    figures: ReturnType<typeof perOp>,
    maxWrites: number,
    maxReads = 0,
  ): Verdict => ({
    target,
    measured: `${fmt(figures.writes, 2)} writes, ${fmt(figures.reads, 2)} reads (+ ${fmt(figures.rateLimit, 2)} rate-limit writes${figures.keyChecks > 0 ? `, ${fmt(figures.keyChecks, 2)} key checks` : ''})`,
    met: figures.writes <= maxWrites && figures.reads <= maxReads && figures.rateLimit <= 1,
  });
  ctx.log(
    `P6 start ${start.list} | finalize ${finalize.list} | repeated GET ${repeated.list} | live GET ${liveGet.list}`,
  );
  return {
    id: 'p6',
    title: `P6 — store round trips per operation (${ops} each, one at a time, warm processes)`,
    baseline:
      'the round-trip budget (docs/architecture.md "Store round trips"); counted with the MongoDB driver\'s command monitoring (`monitorCommands`, commandStarted) in the API and worker processes',
    unit: 'round trips',
    rows: [
      row('start (API)', start, 'POST /api/v1/responses of hello, no Idempotency-Key'),
      row(
        'finalize (worker, per run)',
        finalize,
        'everything the worker sends to the store for a small run, start to end',
      ),
      row('repeated GET of a finished run (API)', repeated, 'each run read once before'),
      row(
        'GET of a live run (API)',
        liveGet,
        'runs this API started, held running by the fake LLM',
      ),
    ],
    verdicts: [
      verdict('start: ≤ 1 write + the rate-limit write, 0 reads', start, 1),
      verdict('finalize: ≤ 2 writes, ≤ 1 `_id` read (small run)', finalize, 2, 1),
      verdict('repeated GET of a finished run: 0 (besides the rate-limit write)', repeated, 0),
      verdict('GET of a live run: 0 (besides the rate-limit write)', liveGet, 0),
    ],
    details: [
      "- Every authenticated request counts itself in its key's D16 window (one `findAndModify rate_limits`, shared by concurrent requests of one key): shown apart from the operation's own round trips.",
      "- A key's D6 check (two `_id` reads: its secret's hash, then its record) is made again once the process's 2-second memory of the key lapses, whatever the request rate: shown apart as well, never in an operation's budget.",
      "- Finalize writes are the worker's (group-committed, store/run-writes.ts); this row only counts them.",
    ],
  };
}
