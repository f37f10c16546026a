/**
 * The production worker entry (`worker/main.ts`) as a child process, for tests that must kill a
 * worker the hard way (SIGKILL) in the middle of an activity. It runs in one node process (no
 * `tsx` launcher in between), so the signal reaches the worker itself. It loads the suite's
 * prebuilt workflow bundle, as the image's worker loads its own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Config } from '../../config';
import { suiteBundlePath } from './suite-bundle';

export interface WorkerProcess {
  child: ChildProcess;
  /** What the worker wrote to stderr (for failure messages). */
  stderr(): string;
  /** SIGKILL, resolved once the process is gone. */
  kill(): Promise<void>;
}

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * Starts a worker on the service's Temporal task queue and database; `mongoUri` may point at a
 * proxy, `env` adds variables (providers, prices) for the worker's activities.
 */
export function startWorkerProcess(
  config: Config,
  opts: { mongoUri?: string; env?: Record<string, string> } = {},
): WorkerProcess {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'worker/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: config.temporal.address,
      TEMPORAL_NAMESPACE: config.temporal.namespace,
      TEMPORAL_TASK_QUEUE: config.temporal.taskQueue,
      MONGODB_URI: opts.mongoUri ?? config.mongo.uri,
      MONGODB_DB: config.mongo.dbName,
      LOG_LEVEL: 'warn',
      WORKFLOW_BUNDLE_PATH: suiteBundlePath(), // no webpack at every start
      ...opts.env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-20_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    stderr: () => stderr,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * The worker processes a describe block starts, each SIGKILLed after the block. Call it before
 * useService, so that the workers are gone before their service closes.
 */
export function useWorkerProcesses(): WorkerProcess[] {
  const workers: WorkerProcess[] = [];
  after(async () => {
    for (const w of workers) await w.kill();
  });
  return workers;
}
