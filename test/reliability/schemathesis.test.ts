/**
 * Schemathesis (from PyPI, pinned in tools/stack/schemathesis-requirements.txt) generates
 * requests from the served OpenAPI document — valid and invalid ones, examples, boundary values,
 * and stateful sequences following the document's links — with a valid key, against a real
 * service. At least 2,000 of them, counted from schemathesis' own NDJSON report; none may answer
 * 5xx or break the document (status, content type, headers, body schema), and every operation
 * must answer 2xx at least once to a request of its own method. Configuration and hooks (real
 * ids, output keys and signed links of this account, and the codec server's token, swapped into
 * positive cases) are in ./schemathesis/.
 *
 * Each run draws a seed and prints it; a failure is replayed with the same cases by
 * `WRS_SCHEMATHESIS_SEED=<seed> npx mocha test/reliability/schemathesis.test.ts`. The suite runs
 * 12 random cases per operation (schemathesis.toml) after the boundary cases of every operation;
 * a deeper run, e.g. before a release: `WRS_SCHEMATHESIS_EXAMPLES=150` (about 5 minutes).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureSchemathesis, type PythonTool } from '../../tools/stack/python-tools';
import { newAccount } from '../support/accounts';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import {
  greetingWorkflow,
  llmWorkflow,
  publish,
  typedInputsWorkflow,
  waitForRun,
} from '../support/fixtures';
import { call } from '../support/http';
import { startService, type TestService } from '../support/service';

const CONFIG_DIR = path.join(__dirname, 'schemathesis');
const MIN_REQUESTS = 2_000;
/** The run's seed: given to replay a failure, else drawn (schemathesis' --seed takes up to 2^32). */
const SEED = Number(process.env.WRS_SCHEMATHESIS_SEED || Math.floor(Math.random() * 2 ** 32));
/** Random cases per operation when a deeper run than schemathesis.toml's is asked for. */
const EXAMPLES = process.env.WRS_SCHEMATHESIS_EXAMPLES;
/** How long the slow workflow's model call takes: its runs stay `running` through the whole schemathesis run unless cancelled. */
const LIVE_RUN_MS = 150_000;
/** The operators' codec token (D32), so the codec server's operations answer more than 401. */
const CODEC_TOKEN = randomBytes(24).toString('hex');

/** One finished scenario of schemathesis' NDJSON report (only the fields read here). */
interface Scenario {
  phase: string;
  recorder: {
    label: string;
    interactions?: Record<
      string,
      { request: { method: string }; response?: { status_code: number } | null }
    >;
    checks?: Record<
      string,
      Array<{
        name: string;
        status: string;
        failure_info?: {
          failure: { code: string; operation: string; title: string; message: string };
        };
      }>
    >;
  };
}

/**
 * What the report says: requests by operation (stateful sequences apart) and status, failed checks,
 * and engine errors. A request whose method is not its operation's (schemathesis' probe of
 * unsupported methods, an OPTIONS answered 200) counts under "<operation> via <METHOD>", not as
 * an answer of the operation.
 */
interface Report {
  requests: number;
  /** Per phase (coverage, fuzzing, stateful ...): its seconds and requests. */
  phases: Map<string, { seconds: number; requests: number }>;
  byOperation: Map<string, Map<number | 'none', number>>;
  failures: string[];
  errors: string[];
}

function readReport(file: string): Report {
  const report: Report = {
    requests: 0,
    phases: new Map(),
    byOperation: new Map(),
    failures: [],
    errors: [],
  };
  const phase = (name: string) => {
    const entry = report.phases.get(name) ?? { seconds: 0, requests: 0 };
    report.phases.set(name, entry);
    return entry;
  };
  const phaseStarts = new Map<string, number>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const event = JSON.parse(line) as Record<string, any>;
    // An engine error (a hook that raised, a schema it could not read ...) means some cases never ran.
    for (const kind of ['NonFatalError', 'FatalError'])
      if (event[kind]) report.errors.push(`${kind}: ${JSON.stringify(event[kind]).slice(0, 1000)}`);
    if (event.PhaseStarted)
      phaseStarts.set(event.PhaseStarted.phase.name, event.PhaseStarted.timestamp);
    if (event.PhaseFinished) {
      const { name } = event.PhaseFinished.phase;
      phase(name).seconds = event.PhaseFinished.timestamp - (phaseStarts.get(name) ?? NaN);
    }
    const scenario = event.ScenarioFinished as Scenario | undefined;
    if (!scenario) continue;
    phase(scenario.phase).requests += Object.keys(scenario.recorder.interactions ?? {}).length;
    for (const interaction of Object.values(scenario.recorder.interactions ?? {})) {
      report.requests += 1;
      const { label } = scenario.recorder;
      const method = interaction.request.method.toUpperCase();
      const key =
        scenario.phase === 'stateful'
          ? 'stateful'
          : label.startsWith(`${method} `)
            ? label
            : `${label} via ${method}`;
      const statuses = report.byOperation.get(key) ?? new Map();
      const status = interaction.response?.status_code ?? 'none';
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      report.byOperation.set(key, statuses);
    }
    for (const checks of Object.values(scenario.recorder.checks ?? {})) {
      for (const check of checks) {
        if (check.status !== 'failure') continue;
        const f = check.failure_info?.failure;
        report.failures.push(
          `${check.name} ${f?.code ?? ''} ${f?.operation ?? scenario.recorder.label}: ${f?.title ?? ''} — ${f?.message ?? ''}`,
        );
      }
    }
  }
  return report;
}

/** Runs the tool to its end; resolves with its exit code and combined output. */
function runTool(
  tool: PythonTool,
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(tool.command, [...tool.args, ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output: Buffer.concat(chunks).toString('utf8') }));
  });
}

/** The part of schemathesis' console report worth a failure message: failures, errors and summary. */
function failureSummary(output: string): string {
  const start = output.search(/={5,} (ERRORS|FAILURES) ={5,}/);
  const text = start >= 0 ? output.slice(start) : output.slice(-4000);
  return text.length > 12_000 ? `${text.slice(0, 8_000)}\n…\n${text.slice(-4_000)}` : text;
}

describe('reliability: schemathesis against the served OpenAPI document', function () {
  this.timeout(600_000);
  let tool: PythonTool;
  let fake: FakeOpenAI;
  let svc: TestService;
  let workDir: string;
  let key: string;
  /** Set while the run's outcome is unknown or failed: its reports are then kept for `st replay` and a look. */
  let keepReports = false;

  before(async () => {
    // Installs it when tools/stack/install.ts has not run on this machine yet (a fresh checkout running one file).
    tool = await ensureSchemathesis({ log: (line) => process.stderr.write(`${line}\n`) });
    fake = await startFakeOpenAI();
    svc = await startService({
      env: {
        RATE_LIMIT_STARTS_PER_MINUTE: '1000000',
        RATE_LIMIT_REQUESTS_PER_MINUTE: '1000000',
        // A stream of a finished run ends within one poll: 100 ms, not a second, per generated request.
        STREAM_POLL_MS: '100',
        OPENAI_BASE_URL: fake.baseUrl,
        CODEC_TOKEN,
        PRICES: JSON.stringify({ 'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 } }),
      },
    });
    ({ key } = await newAccount(svc.store.collections, 1_000_000));
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-schemathesis-'));

    // Real ids for the hooks: workflows (one with inputs of every scalar type, one public), finished runs, their
    // output keys and stream links, files and their signed links; and runs kept `running` by a slow model call,
    // so that cancelling answers 202.
    const hello = JSON.parse(
      fs.readFileSync(path.join(__dirname, '..', '..', 'examples', 'hello.json'), 'utf8'),
    );
    const workflows = [
      { doc: hello, inputs: { name: 'Ada' } },
      {
        doc: typedInputsWorkflow('typed'),
        inputs: { product_name: 'Tea', count: 2, gift_wrap: true },
      },
      { doc: greetingWorkflow('shared', 'Hi', { public: true }), inputs: { name: 'Bo' } },
      { doc: llmWorkflow('slow'), inputs: { topic: `slow:${LIVE_RUN_MS}` }, live: true },
    ];
    const published = [];
    const runs: string[] = [];
    const liveRuns: string[] = [];
    // Runs only DELETE /api/v1/runs/{runId} may remove (the hooks send it no other id): finished and live
    // (a live one is cancelled first, D39).
    const deletableRuns: string[] = [];
    const ended: string[] = [];
    for (const { doc, inputs, live = false } of workflows) {
      const wf = await publish(svc.url, key, doc);
      published.push({
        id: wf.workflow_id,
        slug: wf.slug,
        version: wf.version,
        version_id: wf.version_id,
        inputs,
        live,
      });
      for (let i = 0; i < (live ? 6 : 3); i++) {
        const started = await call(svc.url, 'POST', '/api/v1/responses', {
          key,
          body: { workflowId: wf.workflow_id, inputs },
        });
        assert.equal(started.status, 202, JSON.stringify(started.body));
        const runId: string = started.body.run_id;
        (i >= (live ? 4 : 1) ? deletableRuns : live ? liveRuns : runs).push(runId);
        if (!live) ended.push(runId);
      }
    }
    for (const runId of ended) await waitForRun(svc.url, key, runId);
    const files = [];
    for (const [name, type, body] of [
      ['note.txt', 'text/plain', 'hello schemathesis'],
      [
        'pixel.png',
        'image/png',
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]),
      ],
    ] as const) {
      const res = await fetch(`${svc.url}/api/v1/files?name=${name}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': type },
        body,
      });
      assert.equal(res.status, 201);
      files.push(await res.json());
    }
    // Uploads only DELETE /api/v1/files/{fileId} may remove (the hooks send it no other id).
    const deletable = [];
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${svc.url}/api/v1/files?name=deletable-${i}.txt`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' },
        body: `deletable ${i}`,
      });
      assert.equal(res.status, 201);
      deletable.push(((await res.json()) as { id: string }).id);
    }
    // Workflows only DELETE /api/v1/workflows/{workflowId} may remove (the hooks send it no other id).
    const deletableWorkflows = [];
    for (let i = 0; i < 20; i++)
      deletableWorkflows.push(
        (await publish(svc.url, key, greetingWorkflow(`deletable-${i}`))).workflow_id,
      );
    const links = files.map((f: any) => {
      const url = new URL(f.url);
      return {
        file_id: f.id,
        expires: url.searchParams.get('expires'),
        sig: url.searchParams.get('sig'),
        kid: url.searchParams.get('kid'), // the signature covers it: a link without it is refused
      };
    });
    // Each finished run's output keys, for pages of its outputs (D31).
    const outputs = [];
    for (const runId of runs) {
      const run = await call(svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
      for (const outputKey of Object.keys(run.body.output ?? {}))
        outputs.push({ run_id: runId, key: outputKey });
    }
    assert.ok(outputs.length > 0, 'the finished runs have no outputs');
    // Stream links (D34) of the finished runs only: a live run's stream lasts as long as its slow call.
    const streamLinks = [];
    for (const runId of runs) {
      const minted = await call(svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, { key });
      assert.equal(minted.status, 200, JSON.stringify(minted.body));
      const url = new URL(minted.body.url);
      const link = { run_id: runId, expires: '', sig: '', kid: '' };
      for (const name of ['expires', 'sig', 'kid'] as const) {
        link[name] = url.searchParams.get(name) ?? '';
        assert.ok(link[name], `stream link without ${name}: ${minted.body.url}`);
      }
      streamLinks.push(link);
    }
    // The playground's hashed asset names, as the page links them.
    const assets = [
      ...(await (await fetch(`${svc.url}/`)).text()).matchAll(/"\/playground\/([^"]+)"/g),
    ].map((m) => m[1]);
    assert.equal(assets.length, 2);
    fs.writeFileSync(
      path.join(workDir, 'fixtures.json'),
      JSON.stringify({
        runs,
        live_runs: liveRuns,
        deletable_runs: deletableRuns,
        workflows: published,
        files: files.map((f: any) => f.id),
        deletable_files: deletable,
        deletable_workflows: deletableWorkflows,
        links,
        stream_links: streamLinks,
        outputs,
        assets,
        graph: greetingWorkflow('unused'),
      }),
    );
  });

  after(async () => {
    await svc?.close();
    await fake?.close();
    if (keepReports) process.stderr.write(`      schemathesis reports kept in ${workDir}\n`);
    else if (workDir) fs.rmSync(workDir, { recursive: true, force: true });
  });

  it(`${MIN_REQUESTS}+ generated requests: no 5xx, and every answer matches its documented status, content type, headers and schema`, async () => {
    const started = Date.now();
    keepReports = true;
    const { code, output } = await runTool(
      tool,
      [
        '--config-file',
        path.join(CONFIG_DIR, 'schemathesis.toml'),
        'run',
        `${svc.url}/api/v1/openapi.json`,
        '--report',
        'ndjson,junit',
        '--report-ndjson-path',
        path.join(workDir, 'report.ndjson'),
        '--report-junit-path',
        path.join(workDir, 'junit.xml'),
        '--no-color',
        '--seed',
        String(SEED),
        ...(EXAMPLES ? ['--max-examples', EXAMPLES] : []),
      ],
      {
        WRS_ST_KEY: key,
        WRS_ST_CODEC: CODEC_TOKEN,
        WRS_ST_FIXTURES: path.join(workDir, 'fixtures.json'),
        SCHEMATHESIS_HOOKS: path.join(CONFIG_DIR, 'hooks.py'),
      },
      workDir, // Hypothesis and schemathesis may write caches into the working directory: never into the repo
    );
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    assert.ok(
      fs.existsSync(path.join(workDir, 'report.ndjson')),
      `schemathesis wrote no report (exit ${code}):\n${output.slice(-4000)}`,
    );
    const report = readReport(path.join(workDir, 'report.ndjson'));
    const table = [...report.byOperation]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(
        ([op, statuses]) =>
          `  ${op}: ${[...statuses]
            .sort()
            .map(([s, n]) => `${s}×${n}`)
            .join(' ')}`,
      )
      .join('\n');
    const phases = [...report.phases]
      .filter(([, p]) => p.requests > 0)
      .map(([name, p]) => `${name} ${p.requests} in ${p.seconds.toFixed(1)} s`)
      .join(', ');
    process.stderr.write(
      `      schemathesis ${tool.version}: ${report.requests} requests in ${seconds} s (exit ${code}, seed ${SEED}: WRS_SCHEMATHESIS_SEED=${SEED} replays them)\n      phases: ${phases}\n${table}\n`,
    );

    assert.deepEqual(
      report.failures,
      [],
      `schemathesis found failures:\n${failureSummary(output)}`,
    );
    assert.deepEqual(report.errors, [], `schemathesis had errors:\n${failureSummary(output)}`);
    assert.equal(code, 0, `schemathesis exited ${code}:\n${failureSummary(output)}`);
    assert.ok(
      report.requests >= MIN_REQUESTS,
      `only ${report.requests} requests were generated:\n${table}`,
    );
    // Every documented operation was exercised and answered 2xx at least once, to a request of its own method: the
    // hooks' real ids, links and tokens still reach the code.
    // (schemathesis leaves out the operation serving the document it loaded: GET /api/v1/openapi.json.)
    const doc = (await call(svc.url, 'GET', '/api/v1/openapi.json')).body;
    const operations = Object.entries(doc.paths as Record<string, object>)
      .flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`))
      .filter((operation) => operation !== 'GET /api/v1/openapi.json');
    for (const operation of operations) {
      const statuses = [...(report.byOperation.get(operation)?.keys() ?? [])];
      assert.ok(
        statuses.some((s) => typeof s === 'number' && s >= 200 && s < 300),
        `${operation} never answered 2xx:\n${table}`,
      );
    }
    keepReports = false;
  });
});
