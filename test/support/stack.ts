/**
 * The real stack every integration test runs against: one Temporal dev server and one
 * FerretDB per mocha process, on free ports in a temporary directory, started on first use
 * and stopped by the root hook in hooks.ts; its workers load the suite's bundle (suite-bundle.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { installWorkerRuntime } from '../../worker/runtime';
import { startStack, type Stack } from '../../tools/stack';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/definitions';
import { suiteBundle } from './suite-bundle';

export interface TestStack {
  stack: Stack;
  dataDir: string;
  bundle: WorkflowBundleWithSourceMap;
}

let started: Promise<TestStack> | undefined;

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

/** Stops the stack if it was started and removes its directory. */
export async function stopTestStack(): Promise<void> {
  if (!started) return;
  const { stack, dataDir } = await started;
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
  started = undefined;
}
