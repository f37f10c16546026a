/**
 * The versioning policy's gate (workflows/patches.ts): every history saved by
 * `npm run record-histories` (test/workflows/histories/<release>/) replays against the current
 * workflow code, bundled as a worker bundles it, with the production data converter (D32, D39).
 * A change that is not replay-safe fails here before a deploy makes runs in flight fail their
 * workflow tasks. The patch example (docs/deploy.md "Changing workflow code safely") shows the
 * check catching such a change, and the patch cycle that makes the same change safe. No server:
 * replay needs only the histories.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { FAILURE_CONVERTER_PATH } from '../../lib/codec/data-converter';
import { suiteBundle } from '../support/suite-bundle';
import { installWorkerRuntime } from '../../worker/runtime';
import {
  PATCH_EXAMPLE_DIR,
  loadHistories,
  loadRunSecrets,
  readManifest,
  releaseDirs,
  replayAll,
} from '../support/histories';

const quiet = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (message: string) => console.error(message),
};

/** Shapes the first recorded release held (tools/scripts/record-histories.ts records them all). */
const FIRST_SHAPES = [
  'run-small',
  'run-retried',
  'run-failed-item',
  'run-failed-node',
  'run-big-chunked',
  'run-streamed',
  'run-cancelled',
  'run-timed-out',
  'run-webhook',
  'webhook-delivery',
  'retention',
];

/** Shapes added after the first recorded release: a release before them could not record them. */
const LATER_SHAPES = [
  'run-rerun-failed',
  'run-cost-capped',
  'run-rerun-failed-rows',
  'run-awaited',
  'run-awaited-pure',
  'run-stored-pure-nodes',
  'run-stored-batch',
  'run-stored-join',
  'run-text-bounds',
  'run-big-text',
  'run-credit-capped',
  'run-text-work-bound',
  'run-items-bound',
  'run-reads-bound',
  'run-call-input-bound',
  'run-batch-rows-depth',
  'run-kept-at-rows',
  'run-rerun-list-rows',
  'run-cost-cap-shrunk',
];

/** Shapes every release directory holds, but the later ones a release before them lacks. */
const SHAPES = [...FIRST_SHAPES, ...LATER_SHAPES];

describe('replay: saved histories of every release replay on the current workflow code', function () {
  this.timeout(300_000);
  let bundle: WorkflowBundleWithSourceMap;
  before(async () => {
    installWorkerRuntime('error'); // the replay workers' state changes would print at INFO
    bundle = await suiteBundle();
  });

  it('has histories of at least one release, of every shape (an older release less its retired ones and the shapes added after it)', () => {
    const dirs = releaseDirs();
    assert.ok(dirs.length > 0, 'no release directory: run `npm run record-histories`');
    for (const dir of dirs) {
      const shapes = loadHistories(dir).map((h) => path.basename(h.file).split('@')[0]);
      // A shape a later release changed incompatibly before any deployment is retired in its
      // manifest, with the reason (docs/deploy.md "Changing workflow code safely"); the newest
      // release retires nothing.
      const retired = Object.keys(readManifest(dir).retired ?? {}).map((f) => f.split('@')[0]);
      const newest = dir === dirs.at(-1);
      if (newest) assert.deepEqual(retired, [], path.basename(dir));
      const expected = SHAPES.filter(
        (shape) =>
          !retired.includes(shape) &&
          (newest || !LATER_SHAPES.includes(shape) || shapes.includes(shape)),
      );
      assert.deepEqual([...new Set(shapes)].sort(), expected.sort(), path.basename(dir));
    }
  });

  it('fails them all on a copy of the workflows whose run starts with a timer (not replay-safe)', async () => {
    // The copy sits at the repository root so its relative imports (../activities, ../domain) resolve.
    const copy = path.join(__dirname, '..', '..', `.replay-unsafe-${process.pid}`);
    fs.cpSync(path.join(__dirname, '..', '..', 'workflows'), copy, { recursive: true });
    try {
      const file = path.join(copy, 'run-workflow.ts');
      const source = fs.readFileSync(file, 'utf8');
      assert.match(source, /export async function runWorkflow\(/);
      fs.writeFileSync(
        file,
        `import { sleep as unsafeSleep } from '@temporalio/workflow';\n${source.replace(
          'export async function runWorkflow(',
          'async function runWorkflowAsBefore(',
        )}\nexport async function runWorkflow(...args: Parameters<typeof runWorkflowAsBefore>) {\n  await unsafeSleep(1);\n  return runWorkflowAsBefore(...args);\n}\n`,
      );
      const unsafe = await bundleWorkflowCode({
        workflowsPath: copy,
        failureConverterPath: FAILURE_CONVERTER_PATH,
        logger: quiet,
      });
      const dir = releaseDirs().at(-1)!;
      const runs = loadHistories(dir).filter((h) => path.basename(h.file).startsWith('run-'));
      const results = await replayAll(unsafe, runs, loadRunSecrets(dir));
      assert.equal(results.length, runs.length);
      for (const r of results)
        assert.ok(r.error instanceof DeterminismViolationError, `${r.file}: ${r.error?.stack}`);
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  });

  for (const dir of releaseDirs()) {
    it(`replays every history of ${path.basename(dir)} without nondeterminism`, async () => {
      const histories = loadHistories(dir);
      const results = await replayAll(bundle, histories, loadRunSecrets(dir));
      assert.equal(results.length, histories.length);
      assert.deepEqual(
        results.filter((r) => r.error).map((r) => `${r.file}: ${r.error!.message}`),
        [],
      );
    });
  }
});

describe('replay: the patch example catches an unsafe change and passes the patch cycle', function () {
  this.timeout(300_000);
  const bundles: Record<string, WorkflowBundleWithSourceMap> = {};
  const versions = ['v1', 'v2-unsafe', 'v2-patched', 'v3-deprecated'];
  before(async () => {
    installWorkerRuntime('error');
    // One at a time: webpack on two shared cores.
    for (const version of versions) {
      bundles[version] = await bundleWorkflowCode({
        workflowsPath: require.resolve(`./fixtures/patch-example/${version}`),
        failureConverterPath: FAILURE_CONVERTER_PATH,
        logger: quiet,
      });
    }
  });

  /** Replays the recorded history of `recordedBy` on the code of `code`: 'ok' or the error's class. */
  const replay = async (recordedBy: string, code: string): Promise<string> => {
    const history = loadHistories(PATCH_EXAMPLE_DIR).filter((h) =>
      path.basename(h.file).startsWith(`${recordedBy}@`),
    );
    assert.equal(history.length, 1, `the history of ${recordedBy}`);
    const [result] = await replayAll(bundles[code], history);
    if (!result.error) return 'ok';
    // Nondeterminism, and nothing else (a missing key, a broken history) passes for it.
    assert.ok(result.error instanceof DeterminismViolationError, result.error.stack);
    return 'nondeterminism';
  };

  it('a new activity before an old one without a patch fails the runs of the release before', async () => {
    assert.equal(await replay('v1', 'v1'), 'ok');
    assert.equal(await replay('v1', 'v2-unsafe'), 'nondeterminism');
  });

  it('the same change behind patched() replays both the old runs and its own', async () => {
    assert.equal(await replay('v1', 'v2-patched'), 'ok');
    assert.equal(await replay('v2-patched', 'v2-patched'), 'ok');
  });

  it('deprecatePatch() drops the old path: fine for patched runs, not for the runs before the patch', async () => {
    assert.equal(await replay('v2-patched', 'v3-deprecated'), 'ok');
    assert.equal(await replay('v3-deprecated', 'v3-deprecated'), 'ok');
    assert.equal(await replay('v1', 'v3-deprecated'), 'nondeterminism');
  });

  it('removing the call at the end of the cycle replays the runs of the deprecated release, not of the patched one', async () => {
    // v2-unsafe is the end state of the cycle: the new path, no patch call left. It ships only
    // once no run started on the `patched` release is open: their marker is not a deprecated one.
    assert.equal(await replay('v3-deprecated', 'v2-unsafe'), 'ok');
    assert.equal(await replay('v2-patched', 'v2-unsafe'), 'nondeterminism');
  });
});
