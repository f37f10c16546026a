// A worker given no bundle has its workflow code built by a child process (worker/workflow-bundle.ts),
// so webpack's memory never stays in the worker: the code it receives is the bundle
// tools/scripts/bundle-workflows.ts writes, byte for byte, and a failing bundler fails the start.
import assert from 'node:assert/strict';
import { bundleInChildProcess } from '../../worker/workflow-bundle';
import { suiteBundle } from '../support/suite-bundle';

describe('worker: the workflow bundle built in a child process', function () {
  this.timeout(180_000);

  it('hands back the same code as bundling in this process', async () => {
    const [child, here] = await Promise.all([bundleInChildProcess(), suiteBundle()]);
    assert.ok(child.code.length > 100_000, `a bundle of ${child.code.length} bytes`);
    assert.equal(child.code, here.code);
  });
});
