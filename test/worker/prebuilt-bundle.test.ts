// A worker given WORKFLOW_BUNDLE_PATH (the image's dist/workflow-bundle.js) loads its workflow code
// from that file instead of bundling at start, and runs a real run with it on the test stack.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { newAccount } from '../support/accounts';
import { greetingWorkflow, publish, waitForRun, firstText } from '../support/fixtures';
import { call } from '../support/http';
import { startService, type TestService } from '../support/service';
import { testStack } from '../support/stack';

describe('worker: prebuilt workflow bundle (WORKFLOW_BUNDLE_PATH)', function () {
  this.timeout(120_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-bundle-'));
  let svc: TestService | undefined;
  after(async () => svc?.close());

  it('runs a run with the workflow code loaded from the bundle file', async () => {
    // The same bytes tools/scripts/bundle-workflows.ts writes at image build: bundleWorkflows().code.
    const file = path.join(dir, 'workflow-bundle.js');
    fs.writeFileSync(file, (await testStack()).bundle.code);
    svc = await startService({ env: { WORKFLOW_BUNDLE_PATH: file } });
    const { key } = await newAccount(svc.store.collections);
    await publish(svc.url, key, greetingWorkflow('bundled'));
    const start = await call(svc.url, 'POST', '/api/v1/responses', {
      key,
      body: { workflowId: 'bundled', inputs: { name: 'Ada' } },
    });
    assert.equal(start.status, 202, JSON.stringify(start.body));
    const run = await waitForRun(svc.url, key, start.body.run_id);
    assert.equal(run.status, 'completed', JSON.stringify(run));
    assert.equal(firstText(run, 'greeting'), 'Hello, Ada!');
  });

  it('fails to start when the bundle file is missing (so it is the file that is loaded)', async () => {
    const broken = await startService({
      worker: false,
      env: { WORKFLOW_BUNDLE_PATH: path.join(dir, 'missing.js') },
    });
    try {
      await assert.rejects(broken.startWorker(), /ENOENT|missing\.js/);
    } finally {
      await broken.close();
    }
  });
});
