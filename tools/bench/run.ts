/**
 * `npm run bench`: starts its own Temporal + FerretDB in a temp dir, the service (API and
 * worker, each in a child process: tools/bench/server.ts) and a fake LLM, runs every benchmark from
 * this process (the load generator), and writes tools/bench/RESULTS.md.
 *
 *   npm run bench                         everything, full size → tools/bench/RESULTS.md
 *   npm run bench -- --only p1 --quick    one benchmark (or p1,p3), small → tools/bench/results-partial.md
 *   npm run bench -- --only p4b --chain-rows 20000   P4b (a file through batch → llm → llm) at another size
 *   npm run bench -- --only p4c                      P4c: a million short file rows through one llm node (~15 min; not in the default run)
 *   npm run bench -- --only p9 --rerun-rows 10000    P9 (a run with 1% failed rows, then its re-run of failed items) at another size
 *   npm run bench -- --only p4b --worker-heap-mb 256  the worker child with --max-old-space-size=256
 *   npm run bench -- --only p5 --profile  also --cpu-prof the API and worker; summary printed, profiles in tools/bench/profiles/
 *   --out <file>                          write the report elsewhere
 *   --rows 1000,100000                    P4 batch sizes (runs of 10,000 rows or more at concurrency 64)
 *   --p8-rows 20000                       P8's rows per batch (four accounts' batches at c=64)
 *   --plaintext                           payload codec off (PAYLOAD_ENCRYPTION=false): P1/P2 without D32's encryption, to compare
 *   --render [tools/bench/RESULTS.json]         re-render the report from the JSON a run saved (picks up tools/bench/FINDINGS.md)
 *
 * Nothing here talks to a non-loopback address.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { EnvSchema, loadConfig } from '../../config';
import {
  startStack,
  temporalBinaryPath,
  ferretDbBinaryPath,
  TEMPORAL_CLI_VERSION,
  FERRETDB_VERSION,
  type Stack,
} from '../stack';
import { connectStore, type Store } from '../../store/db';
import { payloadProtection } from '../../lib/codec/data-converter';
import { deleteAll } from './lib/delete-all';
import { createAccount, issueKey, setAccountCap } from '../../store/accounts';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/definitions';
import { FULL, QUICK, type ApiStats, type BenchContext, type BenchResult } from './context';
import { startFakeLlm, type FakeLlm } from './fake-llm';
import { startServerChild, type ServerChild } from './lib/children';
import { keepAliveAgent, requestJson } from './lib/http';
import { ProcessMonitor } from './lib/proc';
import { sleep } from './lib/stats';
import { machineInfo, renderReport, type ReportData } from './report';
import { checkConsistency, debitCheck, tallyDebits } from './consistency';
import { summarizeProfile } from './profile-summary';
import { benchStart } from './benchmarks/p1-start';
import { benchLatency } from './benchmarks/p2-latency';
import { benchStream } from './benchmarks/p3-stream';
import { benchBatch } from './benchmarks/p4-batch';
import { benchFileChain } from './benchmarks/p4b-file-chain';
import { benchMillion } from './benchmarks/p4c-million';
import { benchReads } from './benchmarks/p5-reads';
import { benchRoundTrips } from './benchmarks/p6-round-trips';
import { benchOverTime } from './benchmarks/p7-over-time';
import { benchRerun, RERUN_PRICES } from './benchmarks/p9-rerun';
import { benchFairShare } from './benchmarks/p8-fair-share';

const BENCHMARKS: Record<string, (ctx: BenchContext) => Promise<BenchResult>> = {
  p1: benchStart,
  p2: benchLatency,
  p3: benchStream,
  p5: benchReads,
  p6: benchRoundTrips,
  p7: benchOverTime,
  p4: benchBatch,
  p4b: benchFileChain,
  p4c: benchMillion, // a million rows, about a quarter of an hour: only with --only p4c
  p9: benchRerun, // D38: a 100,000-row run with 1% failed rows, then its re-run of failed items
  p8: benchFairShare, // last: four 100,000-row batches, twice, are the heaviest
};

/** Run only when named with --only (too long for the default run). */
const ON_DEMAND = new Set(['p4c']);

interface Args {
  only: string[];
  quick: boolean;
  profile: boolean;
  out?: string;
  /** Re-render a report from its saved JSON (after editing tools/bench/FINDINGS.md). */
  render?: string;
  /** P4 batch sizes instead of the mode's. */
  rows?: number[];
  /** P4b's row count instead of the mode's (e.g. 1000000 for P4c's size through the chain). */
  chainRows?: number;
  /** P9's row count instead of the mode's. */
  rerunRows?: number;
  /** P8's rows per batch instead of the mode's. */
  p8Rows?: number;
  /** The service without its payload codec (D32), to measure what encryption costs. */
  plaintext: boolean;
  /** `--max-old-space-size` of the worker child, in MB (how far its RSS is garbage V8 lets grow). */
  workerHeapMb?: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { only: [], quick: false, profile: false, plaintext: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') args.quick = true;
    else if (a === '--profile') args.profile = true;
    else if (a === '--plaintext') args.plaintext = true;
    else if (a === '--only')
      args.only.push(
        ...(argv[++i] ?? '')
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean),
      );
    else if (a.startsWith('--only='))
      args.only.push(
        ...a
          .slice(7)
          .split(',')
          .map((s) => s.trim().toLowerCase()),
      );
    else if (a === '--out') args.out = argv[++i];
    else if (a === '--chain-rows') args.chainRows = Number(argv[++i]);
    else if (a === '--rerun-rows') args.rerunRows = Number(argv[++i]);
    else if (a === '--worker-heap-mb') args.workerHeapMb = Number(argv[++i]);
    else if (a === '--p8-rows') args.p8Rows = Number(argv[++i]);
    else if (a === '--rows')
      args.rows = (argv[++i] ?? '')
        .split(',')
        .map(Number)
        .filter((n) => n > 0);
    else if (a === '--render')
      args.render =
        argv[i + 1] && !argv[i + 1].startsWith('--')
          ? argv[++i]
          : path.join(__dirname, 'RESULTS.json');
    else if (a === '--help' || a === '-h') {
      console.log(fs.readFileSync(__filename, 'utf8').split('*/')[0]);
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  for (const id of args.only)
    if (!BENCHMARKS[id])
      throw new Error(`unknown benchmark ${id}; known: ${Object.keys(BENCHMARKS).join(', ')}`);
  return args;
}

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function codeVersion(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      cwd: path.join(__dirname, '..', '..'),
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      encoding: 'utf8',
      cwd: path.join(__dirname, '..', '..'),
    })
      .split('\n')
      .filter(Boolean).length;
    return `${commit}${dirty ? ` + ${dirty} uncommitted changed files` : ''}`;
  } catch {
    return 'unknown';
  }
}

const FINDINGS = path.join(__dirname, 'FINDINGS.md');

let interrupted = false;
let interrupt: (() => void) | undefined;

function writeReport(data: ReportData, outFile: string, withFindings: boolean): void {
  const findings =
    withFindings && fs.existsSync(FINDINGS) ? fs.readFileSync(FINDINGS, 'utf8') : null;
  fs.writeFileSync(outFile, renderReport(data, findings));
  fs.writeFileSync(outFile.replace(/\.md$/, '.json'), `${JSON.stringify(data, null, 1)}\n`);
  log(`wrote ${path.relative(process.cwd(), outFile)}`);
}

function openFilesLimit(): number {
  try {
    const line = fs
      .readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    return Number(line?.split(/\s{2,}/)[1]);
  } catch {
    return NaN;
  }
}

function version(binary: string, fallback: string): string {
  try {
    return execFileSync(binary, ['--version'], { encoding: 'utf8', timeout: 10_000 })
      .trim()
      .split('\n')[0];
  } catch {
    return fallback;
  }
}

/**
 * Rate limits and quotas (D16, D17) may exist by the time this runs: every configuration
 * variable that looks like one is raised out of the way, as long as the configuration still parses.
 */
function limitsOutOfTheWay(base: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  const names = Object.keys((EnvSchema as unknown as { shape: Record<string, unknown> }).shape);
  for (const name of names) {
    if (
      !/RATE|QUOTA|PER_(SECOND|MINUTE|HOUR|DAY)|MAX_(CONCURRENT|ACTIVE|RUNNING)_RUNS|RUNS_PER/.test(
        name,
      )
    )
      continue;
    const candidates = /DISABLE/.test(name)
      ? ['true']
      : /ENABLE/.test(name)
        ? ['false']
        : ['1000000000', '1000000'];
    for (const value of candidates) {
      try {
        loadConfig({ ...base, ...out, [name]: value });
        out[name] = value;
        break;
      } catch {
        // not this value
      }
    }
    if (!(name in out)) log(`warning: could not raise ${name}; it may throttle the benchmark`);
  }
  return out;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.render) {
    const data = JSON.parse(fs.readFileSync(args.render, 'utf8')) as ReportData;
    writeReport(
      data,
      path.resolve(args.out ?? args.render.replace(/\.json$/, '.md')),
      data.machine.mode === 'full',
    );
    return;
  }
  const byDefault = Object.keys(BENCHMARKS).filter((id) => !ON_DEMAND.has(id));
  const selected = args.only.length
    ? Object.keys(BENCHMARKS).filter((id) => args.only.includes(id))
    : byDefault;
  const sizes = structuredClone(args.quick ? QUICK : FULL);
  if (args.rows?.length)
    sizes.p4.cases = args.rows.map((rows) => ({ rows, concurrency: rows >= 10_000 ? 64 : 8 }));
  if (args.chainRows) sizes.p4b.rows = args.chainRows;
  if (args.rerunRows) sizes.p9.rows = args.rerunRows;
  if (args.p8Rows) sizes.p8.rows = args.p8Rows;
  const fullRun =
    !args.quick &&
    !args.rows &&
    !args.chainRows &&
    !args.rerunRows &&
    !args.p8Rows &&
    !args.plaintext &&
    selected.length === byDefault.length &&
    selected.every((id) => byDefault.includes(id));
  const outFile = path.resolve(
    args.out ?? path.join(__dirname, fullRun ? 'RESULTS.md' : 'results-partial.md'),
  );
  const began = Date.now();
  const code = codeVersion();

  const fdLimit = openFilesLimit();
  const needed = sizes.p3.runs * sizes.p3.clientsPerRun + 512;
  if (selected.includes('p3') && fdLimit < needed) {
    const clients = Math.max(1, Math.floor((fdLimit - 512) / sizes.p3.runs));
    log(
      `warning: open files limit ${fdLimit} < ${needed}; P3 scaled down to ${clients} clients per run (run through \`npm run bench\`, which raises it)`,
    );
    sizes.p3.clientsPerRun = clients;
  }

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-bench-'));
  const profileDir = args.profile
    ? path.join(__dirname, 'profiles', new Date().toISOString().replace(/[:.]/g, '-'))
    : undefined;
  let stack: Stack | undefined;
  let fake: FakeLlm | undefined;
  let store: Store | undefined;
  let connection: Connection | undefined;
  let monitor: ProcessMonitor | undefined;
  const children: ServerChild[] = [];
  const results: BenchResult[] = [];
  const failures: Array<{ id: string; error: string }> = [];
  let consistency: string[] = [];
  let versions = {
    temporal: `Temporal CLI ${TEMPORAL_CLI_VERSION}`,
    ferretdb: `FerretDB ${FERRETDB_VERSION}`,
  };

  try {
    log(`stack in ${dataDir}`);
    [stack, fake] = await Promise.all([
      startStack({ dataDir, headless: true, searchAttributes: SEARCH_ATTRIBUTE_TYPES, log }),
      startFakeLlm(),
    ]);
    versions = {
      temporal: version(temporalBinaryPath(), versions.temporal),
      ferretdb: `FerretDB ${version(ferretDbBinaryPath(), FERRETDB_VERSION).replace(/^version:\s*/i, '')}`,
    };

    const baseEnv: Record<string, string> = {
      API_HOST: '127.0.0.1',
      API_PORT: '0',
      TEMPORAL_ADDRESS: stack.temporal.address,
      MONGODB_URI: stack.mongo.uri,
      MONGODB_DB: 'wrs_bench',
      TEMPORAL_TASK_QUEUE: 'wrs-bench',
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_API_KEY: 'bench-key',
      // P9 bills its own model (no other benchmark uses it), so a re-run's cost can be compared.
      PRICES: RERUN_PRICES,
      PAYLOAD_ENCRYPTION: args.plaintext ? 'false' : 'true',
      RUN_CONCURRENCY: '8',
      LOG_LEVEL: 'warn',
    };
    const env = { ...baseEnv, ...limitsOutOfTheWay(baseEnv) };
    const config = loadConfig(env); // fail here, not in a child, on a bad configuration
    log(
      'starting the worker, baseline worker and API children (the workers bundle their workflows first)',
    );
    const [worker, baseline, api] = await Promise.all([
      startServerChild({
        role: 'worker',
        env,
        logDir: dataDir,
        cpuProfDir: profileDir,
        ...(args.workerHeapMb ? { maxOldSpaceMb: args.workerHeapMb } : {}),
      }),
      // Its own process: the run worker's RSS and CPU are the service's alone.
      startServerChild({ role: 'baseline', env, logDir: dataDir }),
      startServerChild({ role: 'api', env, logDir: dataDir, cpuProfDir: profileDir }),
    ]);
    children.push(worker, baseline, api);
    log(
      `API ${api.url} (pid ${api.pid}), worker pid ${worker.pid}, baseline worker pid ${baseline.pid}`,
    );

    store = await connectStore({
      uri: stack.mongo.uri,
      dbName: 'wrs_bench',
      appName: 'wrs-bench-load',
      // The load process seeds and removes 10,000-run fillers (P5, P7): on FerretDB one such
      // deleteMany runs past the service's 60 s operation bound. Its own bound is generous.
      socketTimeoutMs: 600_000,
    });
    const account = await createAccount(store.collections, {
      name: 'bench',
      creditsUsd: 1_000_000,
    });
    // P3 holds 100 of the account's llm calls at once; D36's default cap per account is 64.
    await setAccountCap(
      store.collections,
      account._id,
      'max_provider_calls',
      config.providerCalls.workerSlots,
    );
    const { secret: key } = await issueKey(store.collections, account._id, 'bench');
    connection = await Connection.connect({ address: stack.temporal.address });
    // The service's own data converter: results are sealed by its codec (D32), with the bench database's development key.
    const temporal = new Client({
      connection,
      namespace: 'default',
      dataConverter: payloadProtection(config, store.db).dataConverter,
    });

    // Publish the demo workflow and check one run end to end before measuring anything.
    const agent = keepAliveAgent(2);
    const hello = JSON.parse(
      fs.readFileSync(path.join(__dirname, '..', '..', 'examples', 'hello.json'), 'utf8'),
    );
    const published = await requestJson(agent, api.url!, 'POST', '/api/v1/workflows', {
      key,
      body: hello,
    });
    if (published.status !== 201)
      throw new Error(`publish hello: ${published.status} ${JSON.stringify(published.body)}`);
    const smoke = await requestJson(agent, api.url!, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'hello', inputs: { name: 'Ada' } },
    });
    if (smoke.status !== 202)
      throw new Error(`smoke start: ${smoke.status} ${JSON.stringify(smoke.body)}`);
    await temporal.workflow.getHandle(smoke.body.run_id).result();
    agent.destroy();

    monitor = new ProcessMonitor({
      api: api.pid,
      worker: worker.pid,
      baseline: baseline.pid,
      temporal: stack.temporal.pid,
      ferretdb: stack.mongo.pid,
      load: process.pid,
    });
    const ctx: BenchContext = {
      quick: args.quick,
      sizes,
      api,
      worker,
      apiUrl: api.url!,
      bareHttpUrl: baseline.bareHttpUrl!,
      key,
      accountId: account._id,
      temporal,
      store,
      fake,
      monitor,
      log,
      apiStats: async () => (await (await fetch(`${api.statsUrl}/stats`)).json()) as ApiStats,
      workerStats: async () => (await (await fetch(`${worker.statsUrl}/stats`)).json()) as ApiStats,
      waitIdle: async (maxMs = 120_000) => {
        const t0 = Date.now();
        let running = NaN;
        let initial = NaN;
        while (Date.now() < t0 + maxMs) {
          try {
            running = (await temporal.workflow.count('ExecutionStatus="Running"')).count;
          } catch (err) {
            log(
              `count of running workflows failed (${(err as Error).message}); waiting 5 s instead`,
            );
            await sleep(5_000);
            return { initial, running: NaN, waitedMs: Date.now() - t0 };
          }
          if (Number.isNaN(initial)) {
            initial = running;
            if (running > 0) log(`waiting for ${running} running workflows to finish`);
          }
          if (running === 0) return { initial, running, waitedMs: Date.now() - t0 };
          await sleep(250);
        }
        log(`warning: ${running} workflows still running after ${maxMs} ms`);
        return { initial, running, waitedMs: Date.now() - t0 };
      },
      resetRuns: async (maxMs?: number) => {
        const idle = await ctx.waitIdle(maxMs);
        const finished = await store!.collections.runs
          .find({ account_id: account._id, finalized: true }, { projection: { total_cost: 1 } })
          .toArray();
        tallyDebits(ctx.debitTally, await debitCheck(store!, finished));
        await deleteAll(store!.collections.runs, { finalized: true });
        return idle;
      },
      debitTally: { runs: 0, missing: 0, wrong: 0 },
    };

    const stopped = new Promise<never>(
      (_, reject) => (interrupt = () => reject(new Error('interrupted'))),
    );
    stopped.catch(() => undefined);
    for (const id of selected) {
      if (interrupted) break;
      log(`--- ${id.toUpperCase()} ---`);
      try {
        results.push(await Promise.race([BENCHMARKS[id](ctx), stopped]));
      } catch (err) {
        if (interrupted) break;
        log(`${id} failed: ${(err as Error).stack}`);
        failures.push({ id, error: (err as Error).stack ?? String(err) });
      }
    }
    if (!interrupted) {
      await ctx.waitIdle(30_000);
      consistency = await checkConsistency(ctx).catch((err: Error) => [
        `- consistency check failed: ${err.message}`,
      ]);
      for (const line of consistency) log(line);
    }
  } finally {
    monitor?.stop();
    await Promise.allSettled(children.map((c) => c.stop()));
    await connection?.close().catch(() => undefined);
    await store?.close().catch(() => undefined);
    await fake?.close().catch(() => undefined);
    await stack?.stop().catch(() => undefined);
    if (failures.length === 0 && results.length && !interrupted)
      fs.rmSync(dataDir, { recursive: true, force: true });
    else log(`logs kept in ${dataDir}`);
  }
  if (interrupted) process.exit(130);

  results.sort((a, b) => a.id.localeCompare(b.id));
  const mode = `${args.quick ? `quick (${selected.join(', ')})` : fullRun ? 'full' : `full size, only ${selected.join(', ')}`}${args.plaintext ? ', payload codec OFF' : ''}`;
  const machine = {
    ...machineInfo(versions, mode, String(fdLimit), code),
    durationS: (Date.now() - began) / 1000,
  };
  writeReport({ machine, results, failures, consistency }, outFile, fullRun);
  if (profileDir && fs.existsSync(profileDir)) {
    // tools/bench/lib/children.ts: a folder per role, a profile per thread (a worker's workflow threads too).
    const profiles = fs
      .readdirSync(profileDir, { recursive: true, encoding: 'utf8' })
      .filter((n) => n.endsWith('.cpuprofile'));
    for (const f of profiles) console.log(`\n${summarizeProfile(path.join(profileDir, f))}`);
    log(
      `profiles in ${path.relative(process.cwd(), profileDir)} (open in Chrome DevTools → Performance)`,
    );
  }
  for (const r of results)
    for (const v of r.verdicts)
      log(
        `${r.id.toUpperCase()} ${v.met ? 'MET ' : v.met === false ? 'MISS' : '    '} ${v.target}: ${v.measured}`,
      );
  process.exitCode = failures.length ? 1 : 0;
}

// Ctrl-C or a kill: the finally block above stops the children and the stack, then exits 130.
// A persistent listener, so the stack's own signal hook (tools/stack/process.ts) leaves the stopping to us.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    log(`${signal}: stopping`);
    interrupted = true;
    interrupt?.();
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
