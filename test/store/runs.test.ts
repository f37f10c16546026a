/**
 * Run records hold outputs as JSON text (store/documents.ts, StoredRunDoc): a node may produce
 * any JSON, and FerretDB 1.x refuses `$`-prefixed and dotted keys and arrays inside arrays as
 * document content. Before, such a run completed in Temporal but its record could never be
 * written, so it stayed `pending` in MongoDB and was never debited (found by schemathesis).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { accountBalance } from '../../store/ledger';
import {
  finalizeRunRecord,
  findRunHead,
  findRunLog,
  findRunRecord,
  insertRun,
  saveRunChunk,
} from '../../store/runs';
import type { RunEvent, RunFinal, RunOutput } from '../../domain/run';
import { publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { pendingRun, useTestStore } from '../support/store';
import { useService } from '../support/use-service';

/** JSON that FerretDB cannot hold as document content, every kind at once (and a `__proto__` key). */
const AWKWARD =
  '{"grid":[[1,2],[3,[4]]],"$set":{"a.b":1},"x.y":[{"$gt":0}],"nul\\u0000key":true,"__proto__":{"polluted":true}}';
const awkward = (): unknown => JSON.parse(AWKWARD);

describe('store: run records hold any JSON a node produces', function () {
  this.timeout(60_000);
  const db = useTestStore();

  it('finalizes, reads back and chunks output with nested arrays, `$`, dotted and NUL keys unchanged', async () => {
    const c = db.store.collections;
    const runId = `run_${Date.now().toString(36)}awkward`;
    const output: RunOutput = {
      answer: [
        { id: 'item_1', status: 'completed', parts: [{ type: 'json', data: awkward() }] },
      ] as RunOutput[string],
    };
    const events = [
      { type: 'response.created', sequence_number: 0, data: awkward() },
    ] as unknown as RunEvent[];
    await insertRun(c, pendingRun({ _id: runId, account_id: 'acct_x', key_id: 'key_x' }));
    await saveRunChunk(c, { runId, index: 0, itemEvents: '', output });
    const final: RunFinal = {
      runId,
      accountId: 'acct_x',
      status: 'completed',
      output,
      error: null,
      totalCost: 0,
      completedAtMs: Date.now(),
      events,
      chunks: 1,
    };
    assert.equal(await finalizeRunRecord(c, final), true);

    const record = (await findRunRecord(c, runId))!;
    assert.equal(record.finalized, true);
    // The output: the record's own piece and the chunk's, joined (each appears twice, byte for byte); the log is findRunLog's.
    assert.deepEqual(record.output, { answer: [...output.answer, ...output.answer] });
    assert.equal(record.events, null);
    const stored = (await findRunLog(c, runId))!;
    assert.equal(stored.status, 'completed');
    assert.deepEqual(stored.log?.toArray(), events);
    const data = record.output!.answer[0].parts[0] as { data: Record<string, unknown> };
    assert.ok(
      Object.hasOwn(data.data, '__proto__'),
      'a `__proto__` key stays data, not a prototype',
    );
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    // The head (reads, output pages, deletes): the record's own output piece, no event log read.
    const head = (await findRunHead(c, 'acct_x', runId))!;
    assert.deepEqual(head.output, output);
    assert.equal(head.events, null);
    assert.equal(head.finalized, true);
    assert.equal(
      await findRunHead(c, 'acct_other', runId),
      null,
      'another account still reads nothing',
    );
  });

  describe('a run whose http_request answers such JSON', () => {
    const ctx = useService({ account: false, env: { ALLOW_PRIVATE_NETWORK: 'true' } });
    let target: http.Server;
    let origin: string;
    before(async () => {
      target = http.createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(AWKWARD);
      });
      await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
      origin = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
    });
    after(async () => {
      await new Promise<void>((resolve) => target?.close(() => resolve()));
    });

    it('completes, is finalized and debited once, and answers the JSON as the target sent it', async () => {
      const { accountId, key } = await ctx.newAccount();
      const doc = {
        slug: 'awkward-json',
        nodes: [
          { id: 'fetch', type: 'http_request', method: 'GET', url: `${origin}/data` },
          { id: 'out', type: 'user_result', label: 'Data' },
        ],
        edges: [{ from: 'fetch', to: 'out' }],
      };
      await publish(ctx.svc.url, key, doc);
      const before = await accountBalance(ctx.svc.store.collections, accountId);
      const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key,
        body: { workflowId: doc.slug, inputs: {} },
      });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      const runId: string = res.body.run_id;
      await waitForRun(ctx.svc.url, key, runId);
      const record = await waitFor(
        async () => {
          const found = await findRunRecord(ctx.svc.store.collections, runId);
          return found?.finalized ? found : undefined;
        },
        { what: `${runId} finalized` },
      );
      assert.equal(record.status, 'completed');

      const read = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key });
      assert.equal(read.status, 200);
      assert.deepEqual(read.body.output.data[0].parts, [{ type: 'json', data: awkward() }]);
      const entries = await ctx.svc.store.collections.ledger.find({ run_id: runId }).toArray();
      assert.equal(entries.length, 1, 'debited once');
      assert.ok(
        Math.abs(
          before -
            (await accountBalance(ctx.svc.store.collections, accountId)) -
            record.total_cost!,
        ) < 1e-9,
      );
    });
  });
});
