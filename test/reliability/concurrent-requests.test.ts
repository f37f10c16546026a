/**
 * What one tenant's requests fired at once may not do: a probe sent 20 publishes of one slug at
 * once (six were 500s, and FerretDB lost increments of the workflow's stored bytes; an account
 * now has at most PUBLISH_MAX_IN_PROGRESS in progress, raced here), and 10
 * deletes of one workflow or file at once (each that found it took its bytes off the quota again:
 * the account then published past its quota), and of one run (all answered 200, where a second
 * DELETE is 404). Now every publish gets its own version and the quota counts each once, and of
 * deletes at once exactly one answers 200.
 */
import assert from 'node:assert/strict';
import { PUBLISH_MAX_IN_PROGRESS } from '../../api/workflows/publish-queue';
import { greetingWorkflow, publish, waitForRun } from '../support/fixtures';
import { uploadFile } from '../support/files';
import { call } from '../support/http';
import { startRun } from '../support/runs';
import { useService } from '../support/use-service';

const PUBLISHES = PUBLISH_MAX_IN_PROGRESS;

describe('reliability: one tenant’s requests at once', function () {
  this.timeout(120_000);
  const ctx = useService();

  const storage = async (key: string) => {
    const res = await call(ctx.svc.url, 'GET', '/api/v1/account', { key });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return {
      workflows: res.body.workflow_storage.used_bytes as number,
      files: res.body.file_storage.used_bytes as number,
    };
  };

  /** The statuses of `n` copies of one request sent at once, sorted. */
  const atOnce = async (n: number, send: () => Promise<{ status: number }>) =>
    (await Promise.all(Array.from({ length: n }, send))).map((r) => r.status).sort();

  it('publishes of one slug at once: each a 201 with its own version, each counted once', async () => {
    const { key } = await ctx.newAccount();
    const before = await storage(key);
    const doc = greetingWorkflow('raced');
    // As many as an account may have in progress at once (one more is 429 too_many_publishes).
    const answers = await Promise.all(
      Array.from({ length: PUBLISHES }, () =>
        call(ctx.svc.url, 'POST', '/api/v1/workflows', { key, body: doc }),
      ),
    );
    assert.deepEqual(
      answers.map((r) => r.status),
      Array(PUBLISHES).fill(201),
      JSON.stringify(answers.find((r) => r.status !== 201)?.body),
    );
    assert.deepEqual(
      answers.map((r) => r.body.version).sort((a, b) => a - b),
      Array.from({ length: PUBLISHES }, (_, i) => i + 1),
    );
    // One version's bytes (one more publish, alone) times the versions: what the quota counts.
    const one = (await storage(key)).workflows;
    await publish(ctx.svc.url, key, doc);
    const each = (await storage(key)).workflows - one;
    assert.equal(one - before.workflows, PUBLISHES * each);
    const [stored] = await ctx.svc.store.collections.workflows
      .find({ _id: answers[0].body.workflow_id })
      .toArray();
    assert.equal(
      stored.stored_bytes,
      (PUBLISHES + 1) * each,
      'the stored count, not just the cache',
    );
  });

  it('deletes of one workflow, file or run at once: one 200, the others 404, and the quota freed once', async () => {
    const { key } = await ctx.newAccount();
    await publish(ctx.svc.url, key, greetingWorkflow('kept'));
    await publish(ctx.svc.url, key, greetingWorkflow('gone'));
    const kept = await storage(key);
    const wfStatuses = await atOnce(10, () =>
      call(ctx.svc.url, 'DELETE', '/api/v1/workflows/gone', { key }),
    );
    assert.deepEqual(wfStatuses, [200, ...Array(9).fill(404)]);
    assert.ok((await storage(key)).workflows > 0, 'the kept workflow still counts');
    assert.equal((await storage(key)).workflows * 2, kept.workflows, 'two alike, one gone');

    const fileId = await uploadFile(ctx.svc.url, key, 'x.txt', 'x'.repeat(100_000));
    const withFile = (await storage(key)).files;
    const fileStatuses = await atOnce(10, () =>
      call(ctx.svc.url, 'DELETE', `/api/v1/files/${fileId}`, { key }),
    );
    assert.deepEqual(fileStatuses, [200, ...Array(9).fill(404)]);
    assert.equal((await storage(key)).files, withFile - 100_000);

    await publish(ctx.svc.url, key, greetingWorkflow('greet'));
    const runId = await startRun(ctx.svc.url, key, 'greet', { name: 'x' });
    await waitForRun(ctx.svc.url, key, runId);
    const runStatuses = await atOnce(10, () =>
      call(ctx.svc.url, 'DELETE', `/api/v1/runs/${runId}`, { key }),
    );
    assert.deepEqual(runStatuses, [200, ...Array(9).fill(404)]);
  });
});
