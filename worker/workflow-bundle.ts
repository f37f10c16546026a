/**
 * The workflow code bundle. Webpack's work leaves a worker process ~165 MB larger for good (its
 * heap grows for the bundling and the allocator keeps the pages: measured idle RSS 396 MB against
 * 231 MB with a prebuilt bundle), so a worker that is given no bundle (`npm start`, a worker
 * without WORKFLOW_BUNDLE_PATH) has it built by a short-lived child process (worker/bundle-main.ts)
 * and receives only the code: the same bytes tools/scripts/bundle-workflows.ts writes at image build.
 */
import { fork } from 'node:child_process';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { FAILURE_CONVERTER_PATH } from '../lib/codec/data-converter';

/** Traces workflows started with a trace context (workflows/tracing-interceptors.ts says why only those). */
export const TRACING_INTERCEPTORS = require.resolve('../workflows/tracing-interceptors');

/**
 * Bundles the workflow code once, for reuse by several workers. The bundle carries the failure
 * converter that encodes failure messages (D32), as every client and worker does (lib/codec/data-converter.ts).
 */
export function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    failureConverterPath: FAILURE_CONVERTER_PATH,
    workflowInterceptorModules: [TRACING_INTERCEPTORS],
    logger: quietLogger,
  });
}

/** What the child sends back: the bundle's code, or why it could not be built. */
export type BundleMessage = { code: string } | { error: string };

/**
 * Node's options that load code (tsx's hooks when the worker runs from TypeScript), passed on to
 * the child; others (--cpu-prof, --inspect, heap sizes) stay the worker's own.
 */
function loaderArgs(execArgv: string[]): string[] {
  const out: string[] = [];
  const loader = /^(--require|-r|--import|--loader|--experimental-loader)(=|$)/;
  for (let i = 0; i < execArgv.length; i++) {
    const m = loader.exec(execArgv[i]);
    if (!m) continue;
    out.push(execArgv[i]);
    if (m[2] === '' && i + 1 < execArgv.length) out.push(execArgv[++i]);
  }
  return out;
}

/**
 * How the child loads its entry: the worker's own loader options; from TypeScript sources loaded
 * by a hook Node was not started with (mocha's `require: tsx/cjs`), tsx's.
 */
function childExecArgv(entry: string): string[] {
  const loaders = loaderArgs(process.execArgv);
  if (loaders.length > 0 || !entry.endsWith('.ts')) return loaders;
  return ['--require', require.resolve('tsx/cjs')];
}

/** Builds the bundle in a child process (worker/bundle-main.ts) and resolves with its code. */
export function bundleInChildProcess(): Promise<{ code: string }> {
  return new Promise((resolve, reject) => {
    const entry = require.resolve('./bundle-main');
    const child = fork(entry, [], {
      execArgv: childExecArgv(entry),
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    let answer: BundleMessage | undefined;
    child.once('message', (message) => (answer = message as BundleMessage));
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (answer && 'code' in answer) resolve({ code: answer.code });
      else
        reject(
          new Error(
            `bundling the workflow code failed: ${answer?.error ?? `the bundler exited (${signal ?? code})`}`,
          ),
        );
    });
  });
}

const quietLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};
