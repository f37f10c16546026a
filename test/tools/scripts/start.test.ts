/**
 * `npm start` (tools/scripts/start.ts) as a user runs it, on ports and a data directory of its own: a busy
 * port stops it at once naming the variable to set; two instances run side by side; the worker runs as a child process and is
 * started again when it dies; a SIGTERM (or Ctrl-C) stops it all once the worker has drained; and after a SIGKILL of `npm start` itself, the next start stops the
 * servers it left behind before it binds their ports.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freeStablePorts, isRunning } from '../../../tools/stack';
import { waitFor } from '../../support/http';

const ROOT = path.resolve(__dirname, '..', '..', '..');

interface StartProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

function npmStart(env: Record<string, string>): StartProcess {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'tools/scripts/start.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return { child, output: () => out, exited };
}

async function waitForOutput(
  p: StartProcess,
  pattern: RegExp,
  what: string,
): Promise<RegExpMatchArray> {
  try {
    return await waitFor(async () => pattern.exec(p.output()) ?? undefined, {
      timeoutMs: 90_000,
      intervalMs: 100,
      what,
    });
  } catch (err) {
    throw new Error(`${(err as Error).message}; output so far:\n${p.output()}`);
  }
}

function pidsOf(pattern: RegExp, text: string): number[] {
  return [...text.matchAll(new RegExp(pattern, 'g'))].map((m) => Number(m[1]));
}

describe('npm start (tools/scripts/start.ts)', function () {
  this.timeout(240_000);
  let dataDir: string;
  let env: Record<string, string>;
  const started: StartProcess[] = [];

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-start-test-'));
    const [api, temporal, ui, mongo] = await freeStablePorts(4);
    env = {
      API_PORT: String(api),
      TEMPORAL_PORT: String(temporal),
      TEMPORAL_UI_PORT: String(ui),
      MONGO_PORT: String(mongo),
      DATA_DIR: dataDir,
    };
  });

  after(async () => {
    for (const p of started) {
      if (p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill('SIGTERM');
        await p.exited;
      }
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses a busy port at once, naming it and the variable to set', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) =>
      blocker.listen(Number(env.MONGO_PORT), '127.0.0.1', resolve),
    );
    try {
      const p = npmStart(env);
      started.push(p);
      assert.equal(await p.exited, 1);
      assert.match(
        p.output(),
        new RegExp(`port ${env.MONGO_PORT} \\(FerretDB \\(MongoDB\\)\\) is already in use`),
      );
      assert.match(p.output(), /Set MONGO_PORT to a free port/);
      assert.doesNotMatch(p.output(), /starting Temporal/, 'stops before starting any server');
    } finally {
      blocker.close();
    }
  });

  it('runs beside a second clone on other ports; restarts a killed worker; the next start stops what a SIGKILLed start left behind', async () => {
    const first = npmStart(env);
    started.push(first);
    const neighbourDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-start-test-'));
    const neighbourPorts = await freeStablePorts(4);
    const neighbour = npmStart({
      API_PORT: String(neighbourPorts[0]),
      TEMPORAL_PORT: String(neighbourPorts[1]),
      TEMPORAL_UI_PORT: String(neighbourPorts[2]),
      MONGO_PORT: String(neighbourPorts[3]),
      DATA_DIR: neighbourDir,
    });
    started.push(neighbour);
    await waitForOutput(first, /Workflow Run Service is running/, 'first start up');
    await waitForOutput(
      neighbour,
      /Workflow Run Service is running/,
      'the second clone up beside it',
    );
    for (const port of [env.API_PORT, String(neighbourPorts[0])]) {
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200, `API on ${port}`);
    }
    neighbour.child.kill('SIGTERM');
    assert.equal(await neighbour.exited, 0);
    fs.rmSync(neighbourDir, { recursive: true, force: true });
    const [workerPid] = pidsOf(/worker started \(pid (\d+)\)/, first.output());
    process.kill(workerPid, 'SIGKILL');
    await waitForOutput(
      first,
      new RegExp(`worker \\(pid ${workerPid}\\) exited \\(SIGKILL\\); restarting it`),
      'restart log line',
    );
    await waitFor(
      async () =>
        pidsOf(/worker started \(pid (\d+)\)/, first.output()).length === 2 ? true : undefined,
      { timeoutMs: 30_000, what: 'a second worker' },
    );
    const secondWorker = pidsOf(/worker started \(pid (\d+)\)/, first.output())[1];
    assert.ok(isRunning(secondWorker));

    const servers = ['temporal', 'ferretdb'].map((name) =>
      Number(fs.readFileSync(path.join(dataDir, name, `${name}.pid`), 'utf8')),
    );
    first.child.kill('SIGKILL');
    await first.exited;
    assert.ok(
      servers.every(isRunning),
      'the servers outlive a SIGKILLed start (what the next start must clean up)',
    );
    // The worker notices its parent is gone (IPC channel closed) and exits by itself.
    await waitFor(async () => (isRunning(secondWorker) ? undefined : true), {
      timeoutMs: 60_000,
      what: 'the orphaned worker to exit',
    });

    const second = npmStart(env);
    started.push(second);
    await waitForOutput(
      second,
      /Workflow Run Service is running/,
      'second start up on the same ports',
    );
    const reaped = pidsOf(/\(pid (\d+)\), left running by a crashed start/, second.output());
    assert.deepEqual([...reaped].sort(), [...servers].sort());
    assert.ok(!servers.some(isRunning));

    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  });

  it('stops on SIGTERM once its worker has run a run: the worker drains and exits, then npm start', async () => {
    const p = npmStart(env);
    started.push(p);
    const [, key] = await waitForOutput(p, /Bearer (wrs_sk_\w+)/, 'start up and its demo key');
    const api = `http://127.0.0.1:${env.API_PORT}`;
    const start = await fetch(`${api}/api/v1/responses`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${key}`,
        'Content-Type': 'application/json',
        Prefer: 'wait=30',
      },
      body: JSON.stringify({ workflowId: 'hello', inputs: { name: 'Ada' } }),
    });
    const run = (await start.json()) as { status: string };
    assert.equal(run.status, 'completed', 'the worker ran the demo run');
    // The worker's IPC channel to npm start must not hold it once it has drained (it did).
    p.child.kill('SIGTERM');
    assert.equal(await p.exited, 0);
  });

  it('keeps the codec token out of argv, logs and the Temporal UI settings; DATA_DIR is private (D32)', async () => {
    const p = npmStart({ ...env, LOG_LEVEL: 'debug' });
    started.push(p);
    await waitForOutput(p, /Workflow Run Service is running/, 'start up');
    const token = fs.readFileSync(path.join(dataDir, 'codec-token'), 'utf8').trim();
    assert.ok(token.length >= 32);

    const temporalPid = fs.readFileSync(path.join(dataDir, 'temporal', 'temporal.pid'), 'utf8');
    const argv = fs.readFileSync(`/proc/${temporalPid.trim()}/cmdline`, 'utf8');
    assert.match(argv, /start-dev/, 'read the Temporal server command line');
    assert.ok(!argv.includes(token), 'the Temporal command line holds the codec token');
    const [workerPid] = pidsOf(/worker started \(pid (\d+)\)/, p.output());
    const workerEnv = fs.readFileSync(`/proc/${workerPid}/environ`, 'utf8');
    assert.match(workerEnv, /DATA_DIR=/, "read the worker's environment");
    assert.ok(!workerEnv.includes(token), "the worker's environment holds the codec token");

    const settings = await fetch(`http://127.0.0.1:${env.TEMPORAL_UI_PORT}/api/v1/settings`);
    assert.equal(settings.status, 200);
    assert.ok(!(await settings.text()).includes(token), 'the UI settings hold the codec token');

    // Mistyped codec paths carrying the token, as an operator might send them.
    const api = `http://127.0.0.1:${env.API_PORT}`;
    const answers = await Promise.all([
      fetch(`${api}/codec/${token}/decode`),
      fetch(`${api}/codec/${token}/decod`, { method: 'POST' }),
      fetch(`${api}/codec/${token}`, { method: 'POST' }),
      fetch(`${api}/codec/decode/${token}`, { method: 'POST' }),
    ]);
    assert.deepEqual(
      answers.map((r) => r.status),
      [405, 404, 404, 404],
    );
    await waitFor(
      async () => ((p.output().match(/"path":"\/codec\//g) ?? []).length >= 4 ? true : undefined),
      { what: 'the request log lines of the codec paths' },
    );
    p.child.kill('SIGTERM');
    assert.equal(await p.exited, 0);

    assert.ok(!p.output().includes(token), 'the output of npm start holds the codec token');
    for (const log of ['temporal/temporal.log', 'ferretdb/ferretdb.log']) {
      const file = path.join(dataDir, log);
      assert.ok(!fs.readFileSync(file, 'utf8').includes(token), `${log} holds the codec token`);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600, `${log} mode`);
    }
    for (const file of ['codec-token', 'demo.json'])
      assert.equal(fs.statSync(path.join(dataDir, file)).mode & 0o777, 0o600, `${file} mode`);
    for (const dir of ['.', 'temporal', 'ferretdb', 'ferretdb/data'])
      assert.equal(fs.statSync(path.join(dataDir, dir)).mode & 0o777, 0o700, `${dir} mode`);
  });
});
