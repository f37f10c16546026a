/**
 * `npm test`: the whole suite in three mocha processes at once (`--jobs N`: N). Each is an ordinary `mocha <files>`
 * run with .mocharc.cjs (its stack hooks, forbidPending, the reporter) and its own real stack: one
 * Temporal dev server and one FerretDB on free ports in its own directory (test/support/stack.ts),
 * so nothing is shared between them but the machine. Much of the suite waits (on a restarted
 * server, a provider's delay, a drain's grace period), and the other process uses that time.
 * Three processes keep about 1.7 of the two cores busy (the count line says how busy they were).
 *
 * The files are dealt out by their usual duration (SECONDS, measured; any other file counts as
 * DEFAULT_SECONDS) so that the processes end at about the same time: a stale number only makes
 * one end a little later. The first process's report is printed as it runs, the others', whole,
 * after it; each one's count line reads "test process N: N passed, N failed", and the last line
 * adds them up, "N passed, N failed", as CI reads it; just before it, every failed test is named
 * again (the reporter's "failed: …" lines), so a log cut to its tail still says what failed. A
 * process that ends without its count line (it crashed) counts as one failure.
 *
 * `npm test -- --jobs 1` runs the suite in one process; `npm test -- --jobs 3 <files>` deals
 * just those files; `npm test -- <files or mocha options>` runs plain mocha with them.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const REPO = path.resolve(__dirname, '..', '..');
const MOCHA = require.resolve('mocha/bin/mocha.js');

/** Seconds a file takes on a warm 2-core machine in a whole-suite run of three processes (the reporter's "slowest files"), for the files over ~3 s. */
const SECONDS: Record<string, number> = {
  'test/reliability/ferretdb-restart-new-worker.test.ts': 99,
  'test/deploy/temporal-postgres.test.ts': 69,
  'test/deploy/rolling-upgrade.test.ts': 60,
  'test/store/past-one-delete.test.ts': 57,
  'test/reliability/load.test.ts': 53,
  'test/workflows/big-run-files.test.ts': 53,
  'test/reliability/ferretdb-restart.test.ts': 45,
  'test/api/runs/rerun-run.test.ts': 40,
  'test/reliability/temporal-restart.test.ts': 39,
  'test/clients/python.test.ts': 38,
  'test/reliability/schemathesis.test.ts': 36,
  'test/workflows/replay.unit.test.ts': 33,
  'test/api/runs/settle-without-worker.test.ts': 31,
  'test/workflows/big-runs.test.ts': 30,
  'test/reliability/worker-crash.test.ts': 28,
  'test/browser/playground.browser.test.ts': 26,
  'test/tools/scripts/start.test.ts': 25,
  'test/worker/block-queue.test.ts': 25,
  'test/worker/drain.test.ts': 24,
  'test/worker/webhook-queue.test.ts': 22,
  'test/api/runs/start-unsure.test.ts': 21,
  'test/clients/typescript.test.ts': 21,
  'test/workflows/history-room.test.ts': 21,
  'test/api/limits/credit-check-billing.test.ts': 20,
  'test/api/runs/download-cap.test.ts': 20,
  'test/api/stream/run-streams.test.ts': 20,
  'test/api/middleware/rate-limit.test.ts': 19,
  'test/api/runs/idempotent-start.test.ts': 19,
  'test/deploy/alert-e2e.test.ts': 19,
  'test/reliability/big-run-ferretdb-restart.test.ts': 19,
  'test/reliability/big-run-temporal-restart.test.ts': 19,
  'test/reliability/big-run-worker-crash.test.ts': 19,
  'test/activities/node-block.test.ts': 18,
  'test/reliability/api-crash.test.ts': 18,
  'test/workflows/pure-node-bounds.test.ts': 18,
  'test/deploy/api-drain.test.ts': 17,
  'test/store/files.test.ts': 17,
  'test/worker/fair-share.test.ts': 17,
  'test/activities/answer-limits.test.ts': 16,
  'test/workflows/run-end.test.ts': 16,
  'test/workflows/template-bounds.test.ts': 16,
  'test/api/server.test.ts': 15,
  'test/api/runs/settle-run.test.ts': 14,
  'test/workflows/media.test.ts': 14,
  'test/activities/node-chunk.test.ts': 13,
  'test/reliability/fuzz.test.ts': 13,
  'test/activities/block-storage.test.ts': 12,
  'test/api/limits/credit-check-holds.test.ts': 11,
  'test/api/runs/rerun-run-known-failures.test.ts': 11,
  'test/api/stream/third-party-clients.test.ts': 11,
  'test/clients/typescript-faults.unit.test.ts': 11,
  'test/deploy/alerts.test.ts': 11,
  'test/activities/webhook.test.ts': 10,
  'test/api/contract/openapi-document-tools.unit.test.ts': 10,
  'test/api/routes/responses-limits.test.ts': 10,
  'test/api/routes/codec.test.ts': 9,
  'test/api/runs/start-run-controls.test.ts': 9,
  'test/deploy/metrics-live.test.ts': 9,
  'test/deploy/readiness-temporal-down.test.ts': 9,
  'test/store/workflows.test.ts': 9,
  'test/api/round-trips.test.ts': 8,
  'test/api/routes/openapi.test.ts': 8,
  'test/browser/stream.browser.test.ts': 8,
  'test/browser/temporal-ui.browser.test.ts': 8,
  'test/cli/cli.test.ts': 8,
  'test/workflows/failures.test.ts': 7,
  'test/workflows/run-state-log.unit.test.ts': 7,
  'test/api/runs/delete-run.test.ts': 6,
  'test/tools/stack/stack.test.ts': 6,
  'test/worker/unopenable-tasks.test.ts': 6,
  'test/workflows/worker-lifecycle.test.ts': 6,
  'test/api/runs/cancel-run.test.ts': 5,
  'test/api/middleware/authenticate.test.ts': 4,
  'test/reliability/hostile-tenants.test.ts': 4,
  'test/store/item-blocks.test.ts': 4,
  'test/tools/stack/registry.unit.test.ts': 4,
};
const DEFAULT_SECONDS = 2;

/** Three processes: much of the suite waits, so a third keeps the two cores busier (header). */
const DEFAULT_JOBS = 3;

/** Every test file, as .mocharc.cjs finds them (test/**\/*.test.ts), in a stable order. */
function suiteFiles(): string[] {
  return (fs.readdirSync(path.join(REPO, 'test'), { recursive: true }) as string[])
    .map((file) => path.posix.join('test', file.split(path.sep).join('/')))
    .filter((file) => file.endsWith('.test.ts'))
    .sort();
}

/** Longest first, each to the group with the least work so far; a group keeps that order (long files first). */
function deal(files: string[], jobs: number): string[][] {
  const groups = Array.from({ length: jobs }, () => ({ files: [] as string[], seconds: 0 }));
  const weight = (file: string) => SECONDS[file] ?? DEFAULT_SECONDS;
  for (const file of [...files].sort((a, b) => weight(b) - weight(a) || a.localeCompare(b))) {
    const lightest = groups.reduce((a, b) => (b.seconds < a.seconds ? b : a));
    lightest.files.push(file);
    lightest.seconds += weight(file);
  }
  return groups.map((g) => g.files).filter((g) => g.length > 0);
}

interface Outcome {
  code: number | null;
  passed: number;
  failed: number;
  counted: boolean;
  /** The reporter's "failed: …" lines, one per failed test (test/reporter.cjs). */
  failures: string[];
}

const COUNT_LINE = /^(\d+) passed, (\d+) failed$/;
const FAILURE_LINE = /^failed: /;

/**
 * One mocha process over `args`; its output goes to `write` as it comes. With a `label` (one of
 * several processes), its own count line is written as "<label>: N passed, N failed", so that the
 * only plain count line is the total at the end.
 */
function runGroup(
  args: string[],
  write: (chunk: Buffer) => void,
  label?: string,
): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MOCHA, ...args], {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let count: RegExpExecArray | null = null;
    const failures: string[] = [];
    let partial = '';
    const lines = (text: string) => {
      for (const line of text.split('\n')) {
        const found = COUNT_LINE.exec(line);
        if (found) count = found;
        if (FAILURE_LINE.test(line)) failures.push(line);
        write(Buffer.from(`${found && label ? `${label}: ${line}` : line}\n`));
      }
    };
    child.stdout.on('data', (chunk: Buffer) => {
      const text = partial + chunk.toString('utf8');
      const end = text.lastIndexOf('\n');
      partial = text.slice(end + 1);
      if (end >= 0) lines(text.slice(0, end));
    });
    child.stderr.on('data', write);
    child.on('error', reject);
    child.on('close', (code) => {
      if (partial) lines(partial);
      const found = count as RegExpExecArray | null;
      resolve({
        code,
        passed: found ? Number(found[1]) : 0,
        failed: found ? Number(found[2]) : 0,
        counted: found !== null,
        failures,
      });
    });
  });
}

const children: ReturnType<typeof spawn>[] = [];

/**
 * CPU seconds spent by the ended mocha processes and the servers they started and waited for
 * (Linux's cutime + cstime), which says whether another process would find idle cores.
 */
function childCpuSeconds(): number | undefined {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd on
    return (Number(fields[13]) + Number(fields[14])) / 100; // cutime, cstime; USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

async function main(args: string[]): Promise<number> {
  const jobsAt = args.indexOf('--jobs');
  const jobs = jobsAt >= 0 ? Number(args[jobsAt + 1]) : DEFAULT_JOBS;
  const rest = jobsAt >= 0 ? args.filter((_, i) => i !== jobsAt && i !== jobsAt + 1) : args;
  if (!Number.isInteger(jobs) || jobs < 1)
    throw new Error(`--jobs takes a whole number, not ${args[jobsAt + 1]}`);
  const files = rest.filter((arg) => arg.endsWith('.test.ts'));
  if (rest.length > files.length || (files.length > 0 && jobsAt < 0)) {
    // Mocha options, or files without --jobs: plain mocha, as `npx mocha` would run them.
    const { code } = await runGroup(rest, (chunk) => process.stdout.write(chunk));
    return code ?? 1;
  }

  const all = suiteFiles();
  // A renamed file loses its weight silently (it counts DEFAULT_SECONDS): say so, so the table is kept.
  const stale = Object.keys(SECONDS).filter((file) => !all.includes(file));
  if (stale.length > 0)
    process.stdout.write(`test-suite: no such file, update SECONDS: ${stale.join(', ')}\n`);
  const groups = deal(files.length > 0 ? files : all, jobs);
  const buffers = groups.map(() => [] as Buffer[]);
  const started = Date.now();
  const took: string[] = []; // each process's minutes: how even the deal was
  const outcomes = await Promise.all(
    groups.map((files, i) =>
      runGroup(
        files,
        (chunk) => (i === 0 ? process.stdout.write(chunk) : buffers[i].push(chunk)),
        `test process ${i + 1}`,
      ).then((outcome) => {
        took[i] = ((Date.now() - started) / 60_000).toFixed(1);
        return outcome;
      }),
    ),
  );
  for (let i = 1; i < groups.length; i++) {
    process.stdout.write(
      `\n── test process ${i + 1} of ${groups.length} (${groups[i].length} files) ──\n`,
    );
    process.stdout.write(Buffer.concat(buffers[i]));
  }
  let passed = 0;
  let failed = 0;
  outcomes.forEach((o, i) => {
    passed += o.passed;
    failed += o.failed;
    if (!o.counted) {
      failed += 1;
      process.stdout.write(
        `\ntest process ${i + 1} ended (exit ${o.code}) without its count line\n`,
      );
    }
  });
  // Every process's failures again, last: a CI log cut to its tail still names them.
  const failures = outcomes.flatMap((o, i) =>
    o.failures.map((line) => `test process ${i + 1}: ${line}`),
  );
  if (failures.length > 0) process.stdout.write(`\n${failures.join('\n')}\n`);
  const seconds = (Date.now() - started) / 1000;
  const cpu = childCpuSeconds();
  process.stdout.write(
    `\n${groups.length} test process${groups.length > 1 ? 'es' : ''}, ${(seconds / 60).toFixed(1)} min` +
      (groups.length > 1 ? ` (each: ${took.join(', ')} min)` : '') +
      (cpu === undefined ? '' : `, ${(cpu / seconds).toFixed(2)} cores busy on average`) +
      '\n',
  );
  process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
  return failed > 0 || outcomes.some((o) => o.code !== 0) ? 1 : 0;
}

// Ctrl-C or a CI timeout: each mocha process gets the signal and stops its own stack.
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
  });

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
