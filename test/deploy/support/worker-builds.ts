/**
 * Worker builds of two commits for the rolling upgrade test: a checkout of another commit (a git
 * worktree sharing this checkout's node_modules) and this tree, each with its workflow bundle
 * written as the image writes it (tools/scripts/bundle-workflows.ts, WORKFLOW_BUNDLE_PATH), and
 * worker processes of a build (`worker/main.ts`) that a test stops with SIGTERM, as Compose and
 * Kubernetes do, and waits for until they have drained.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../../tools/stack/ports';
import { waitFor } from '../../support/http';
import { suiteBundle, suiteBundlePath } from '../../support/suite-bundle';

const ROOT = path.resolve(__dirname, '..', '..', '..');

export interface WorkerBuild {
  /** The commit (short), or `working tree`. */
  name: string;
  dir: string;
  bundlePath: string;
  remove(): void;
}

const git = (...args: string[]) =>
  execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();

/** Writes the build's workflow bundle with its own code (a child process in its directory). */
function bundle(dir: string, out: string): void {
  execFileSync(
    process.execPath,
    ['--require', 'tsx/cjs', 'tools/scripts/bundle-workflows.ts', out],
    { cwd: dir, stdio: 'pipe' },
  );
}

/** A checkout of `commit` in a temporary git worktree, its node_modules this checkout's. */
export function checkoutBuild(commit: string): WorkerBuild {
  const sha = git('rev-parse', '--short=12', commit);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `wrs-build-${sha}-`));
  git('worktree', 'add', '--detach', dir, sha);
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  const bundlePath = path.join(dir, 'dist', 'workflow-bundle.js');
  const remove = () => {
    git('worktree', 'remove', '--force', dir);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    bundle(dir, bundlePath);
  } catch (err) {
    remove();
    throw err;
  }
  return { name: sha, dir, bundlePath, remove };
}

/** This checkout as it is (the release being rolled out), with the suite's bundle of it. */
export async function currentBuild(): Promise<WorkerBuild> {
  await suiteBundle();
  return { name: 'working tree', dir: ROOT, bundlePath: suiteBundlePath(), remove: () => {} };
}

export interface WorkerChild {
  build: WorkerBuild;
  child: ChildProcess;
  stderr(): string;
  /** SIGTERM, then resolves with the exit code once the worker drained and exited. */
  terminate(): Promise<number | null>;
  kill(): Promise<void>;
}

/** Starts a worker of `build` and resolves once its /readyz says it polls. */
export async function startWorkerOf(
  build: WorkerBuild,
  env: Record<string, string>,
): Promise<WorkerChild> {
  const metricsPort = await freePort();
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'worker/main.ts'], {
    cwd: build.dir,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'warn',
      ...env,
      WORKFLOW_BUNDLE_PATH: build.bundlePath,
      WORKER_METRICS_PORT: String(metricsPort),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-20_000);
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`worker of ${build.name} exited:\n${stderr}`);
      const res = await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined);
      return res?.status === 200 || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 200, what: `a worker of ${build.name} polling` },
  );
  return {
    build,
    child,
    stderr: () => stderr,
    terminate: async () => {
      child.kill('SIGTERM');
      return exited;
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
