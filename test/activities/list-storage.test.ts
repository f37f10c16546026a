/**
 * D19, D35 on the real stack: the lists a run stores of its own count against the account's
 * storage quota, as its big nodes' items do. A file's rows copied for a run that has no room for
 * them fail the run before any provider call; with room, the copy is counted to the byte, a
 * `batch` of that stored list is counted again, and the run's delete gives the room back.
 */
import assert from 'node:assert/strict';
import { itemLength, pageId } from '../../domain/item-blocks';
import { completed, valuePart } from '../../domain/items';
import { setAccountCap } from '../../store/accounts';
import { storedItemBytes } from '../../store/item-usage';
import { PRICES, START_FEE_USD } from '../support/execution';
import { publish, waitForRun } from '../support/fixtures';
import { uploadFile } from '../support/files';
import { call, waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { useService } from '../support/use-service';

const QUOTA = 256 * 1024;

/** Rows → batch `split` → batch `flat` (each row is an array: its elements) → llm → result. */
const twoBatches = {
  slug: 'two-batches',
  concurrency: 8,
  nodes: [
    { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'file' },
    { id: 'split', type: 'batch' },
    { id: 'flat', type: 'batch' },
    { id: 'ask', type: 'llm', model: 'gpt-test', prompt: '{{row}}' },
    { id: 'out', type: 'user_result', label: 'Answers' },
  ],
  edges: [
    { from: 'rows', to: 'split', port: 'rows' },
    { from: 'split', to: 'flat', port: 'rows' },
    { from: 'flat', to: 'ask', port: 'row' },
    { from: 'ask', to: 'out' },
  ],
};

/** What a stored list of these rows holds: each row's item, as its JSON's length. */
const listBytes = (rows: unknown[]) =>
  rows.reduce<number>((sum, row) => sum + itemLength(completed(valuePart(row))), 0);

describe('the lists a run stores count against the account’s storage quota (D19, D35)', function () {
  this.timeout(180_000);
  const ctx = useService({
    fakeOpenAI: true,
    env: { PRICES, START_FEE_USD: String(START_FEE_USD) },
  });

  it('a file’s rows without room fail the run before any call; with room, each copy counts until the run is deleted', async () => {
    const { accountId, key } = await ctx.newAccount(10);
    const c = ctx.svc.store.collections;
    await setAccountCap(c, accountId, 'max_file_storage_bytes', QUOTA);
    await publish(ctx.svc.url, key, twoBatches);
    // 400 rows, each an array of two ~200-character prompts: a ~160 KB file, whose copy does not
    // fit in what the quota leaves.
    const rows = Array.from({ length: 400 }, (_, i) => [
      `row ${i} a `.padEnd(200, '.'),
      `row ${i} b `.padEnd(200, '.'),
    ]);
    const fileId = await uploadFile(
      ctx.svc.url,
      key,
      'rows.jsonl',
      rows.map((row) => JSON.stringify(row)).join('\n'),
    );

    const before = ctx.fake.requests.length;
    const refused = await waitForRun(
      ctx.svc.url,
      key,
      await startRun(ctx.svc.url, key, 'two-batches', { rows: fileId }),
    );
    assert.equal(refused.status, 'failed');
    assert.match(refused.error, /input 'rows': no room to store it/);
    assert.match(refused.error, /files and stored items hold \d+ of the 262144 bytes/);
    assert.equal(ctx.fake.requests.length, before, 'no provider call');
    assert.equal(refused.total_cost, START_FEE_USD);

    // With room: both lists are counted, each to the byte of its items' JSON.
    await setAccountCap(c, accountId, 'max_file_storage_bytes', 4 * QUOTA);
    const run = await waitFor(
      async () => {
        const runId = await startRun(ctx.svc.url, key, 'two-batches', { rows: fileId });
        const ended = await waitForRun(ctx.svc.url, key, runId, 120_000);
        return ended.status === 'completed' ? ended : undefined; // the worker's quota read anew
      },
      { what: 'a run once the quota is raised' },
    );
    assert.equal(run.output.answers.length, 800);
    const usage = async (nodeId: string) =>
      (await c.itemUsage.findOne({ _id: pageId(run.id, nodeId, 0) }))?.bytes;
    assert.equal(await usage('split'), listBytes(rows));
    assert.equal(await usage('flat'), listBytes(rows.flat()));

    // Its delete gives the room back (the refused run stored nothing).
    const deleted = await call(ctx.svc.url, 'DELETE', `/api/v1/runs/${run.id}`, { key });
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.equal(await usage('split'), undefined);
    assert.equal(await storedItemBytes(c, accountId), 0);
  });
});
