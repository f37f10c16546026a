/**
 * The workflow bundle of this test process, built once (webpack takes seconds of CPU): the
 * in-process workers, the restart stacks and the replay test load it, and the worker processes
 * the tests start load it as a file (WORKFLOW_BUNDLE_PATH), as the image's worker loads its own.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { bundleWorkflows } from '../../worker/create-worker';

let bundled: Promise<WorkflowBundleWithSourceMap> | undefined;
let built: WorkflowBundleWithSourceMap | undefined;
let file: string | undefined;

/** The bundle of the workflow code in this checkout, built on first use. */
export function suiteBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundled ??= bundleWorkflows().then((bundle) => (built = bundle));
  return bundled;
}

/** The bundle as a file, written on first use and removed when the process exits; suiteBundle() must have been awaited. */
export function suiteBundlePath(): string {
  if (!built) throw new Error('the suite bundle is not built yet: await suiteBundle() first');
  if (!file) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'wrs-bundle-'));
    file = path.join(dir, 'workflow-bundle.js');
    writeFileSync(file, built.code);
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return file;
}
