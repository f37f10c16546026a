/**
 * The real stack every integration test runs against: one Temporal dev server and one
 * FerretDB per mocha process, on free ports in a temporary directory, started on first use
 * and stopped by the root hook in hooks.ts; and the workflow bundle, built once per process for
 * the workers in it and (as a file, as the image ships it) for the worker processes it starts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { installWorkerRuntime } from '../../worker/runtime';
import { startStack, type Stack } from '../../tools/stack';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/definitions';
import { bundleWorkflows } from '../../worker/create-worker';

export interface TestStack {
  stack: Stack;
  dataDir: string;
  bundle: WorkflowBundleWithSourceMap;
}

let started: Promise<TestStack> | undefined;
let bundled: Promise<WorkflowBundleWithSourceMap> | undefined;
let bundleFile: { dir: string; path: string } | undefined;

/** The suite's stack, started once. */
export function testStack(): Promise<TestStack> {
  started ??= (async () => {
    installWorkerRuntime('error'); // expected provider failures would otherwise print a stack trace each
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wrs-test-'));
    const [stack, bundle] = await Promise.all([
      startStack({ dataDir, headless: true, searchAttributes: SEARCH_ATTRIBUTE_TYPES }),
      suiteBundle(),
    ]);
    return { stack, dataDir, bundle };
  })();
  return started;
}

/** The workflow bundle of this process's tests, built once (webpack takes seconds of CPU). */
export function suiteBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundled ??= bundleWorkflows().then((bundle) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'wrs-bundle-'));
    bundleFile = { dir, path: path.join(dir, 'workflow-bundle.js') };
    writeFileSync(bundleFile.path, bundle.code);
    return bundle;
  });
  return bundled;
}

/**
 * The suite's bundle as the file a worker process loads (WORKFLOW_BUNDLE_PATH, as the image's
 * worker does), so that none bundles again at its start; the bundle is built by then (suiteBundle).
 */
export function suiteBundlePath(): string {
  if (!bundleFile) throw new Error('the suite bundle is not built yet: await suiteBundle() first');
  return bundleFile.path;
}

/** Stops the stack if it was started and removes its directory and the bundle's file. */
export async function stopTestStack(): Promise<void> {
  if (bundleFile) rmSync(bundleFile.dir, { recursive: true, force: true });
  bundleFile = undefined;
  bundled = undefined;
  if (!started) return;
  const { stack, dataDir } = await started;
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
  started = undefined;
}
