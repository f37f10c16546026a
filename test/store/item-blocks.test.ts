/**
 * D35's stored pages on the embedded FerretDB: a page is written compressed and read back whole,
 * a page written as JSON text (before compression) is still read, and a read by `_id` is an index
 * lookup, not a scan of every page stored before it (tools/stack/ferretdb-id-index.ts); a block's
 * merge of a page names every row of its write the stored copy beat (mergePages).
 */
import assert from 'node:assert/strict';
import type { Store } from '../../store/db';
import {
  insertPages,
  mergePages,
  readPage,
  replacePages,
  storedItemLines,
  storedItems,
} from '../../store/item-blocks';
import { itemLines } from '../../api/runs/output-items';
import { newId } from '../../domain/ids';
import { pageId, type StoredRow } from '../../domain/item-blocks';
import { useTestStore } from '../support/store';
import { waitFor } from '../support/http';

const row = (text: string): StoredRow => ({
  item: { status: 'completed', parts: [{ type: 'text', text }] },
  cost: 0.002,
});

/**
 * FerretDB's own plan for a read by `_id` (its `explain` names the SQLite plan). A read comes
 * first: an explain alone does not notice a schema change its SQLite connection has not seen.
 */
async function planOf(store: Store, collection: string, id: string): Promise<string> {
  await store.db.collection(collection).findOne({ _id: id as never });
  const answer = await store.db.command({ explain: { find: collection, filter: { _id: id } } });
  return JSON.stringify((answer as { queryPlanner?: unknown }).queryPlanner);
}

describe('store: item pages (D35)', function () {
  this.timeout(60_000);
  const db = useTestStore();

  it('stores a page compressed and reads it back; a retry changes nothing', async () => {
    const c = db.store.collections;
    const rows = [row('één "quoted" answer\n'.repeat(50)), null, row('third')];
    await insertPages(c, 'run_a', 'ask', [{ page: 0, rows }]);
    await insertPages(c, 'run_a', 'ask', [{ page: 0, rows: [null, null, null] }]);
    const doc = await c.itemBlocks.findOne({ _id: pageId('run_a', 'ask', 0) });
    assert.ok(doc?.rows_z, 'compressed rows');
    assert.equal(doc.rows_json, undefined);
    assert.ok(doc.rows_z.length() < JSON.stringify(rows).length / 4);
    assert.deepEqual(await readPage(c, 'run_a', 'ask', 0), rows);

    await replacePages(c, 'run_a', 'ask', [{ page: 0, rows: [row('again')] }]);
    assert.deepEqual(await readPage(c, 'run_a', 'ask', 0), [row('again')]);
    assert.equal(await readPage(c, 'run_a', 'ask', 1), null);
  });

  it('a merge keeps the stored rows and names every row of the write they beat, equal or not', async () => {
    const c = db.store.collections;
    await insertPages(c, 'run_m', 'ask', [{ page: 0, rows: [row('a'), row('b'), null] }]);
    // Row 0 stored as written (another attempt's identical copy, or this writer's own).
    const equal = await mergePages(c, 'run_m', 'ask', [
      { page: 0, rows: [row('a'), null, row('c')] },
    ]);
    assert.deepEqual(equal, { foreign: true, kept: [{ page: 0, position: 0, same: true }] });
    const differing = await mergePages(c, 'run_m', 'ask', [
      { page: 0, rows: [row('x'), row('b'), row('c')] },
    ]);
    assert.deepEqual(differing, {
      foreign: true,
      kept: [
        { page: 0, position: 0, same: false },
        { page: 0, position: 1, same: true },
        { page: 0, position: 2, same: true },
      ],
    });
    assert.deepEqual(await readPage(c, 'run_m', 'ask', 0), [row('a'), row('b'), row('c')]);
  });

  it('still reads a page written as JSON text', async () => {
    const c = db.store.collections;
    const rows = [row('old'), null];
    await c.itemBlocks.insertOne({
      _id: pageId('run_b', 'ask', 0),
      run_id: 'run_b',
      node_id: 'ask',
      page: 0,
      rows_json: JSON.stringify(rows),
      created_at: new Date(),
    });
    assert.deepEqual(await readPage(c, 'run_b', 'ask', 0), rows);
  });

  it('writes the results file from the stored lines byte for byte as the items serialized one by one', async () => {
    const c = db.store.collections;
    const failedRow: StoredRow = {
      item: {
        status: 'failed',
        parts: [],
        error: { message: 'bad "row"\n', type: 'provider_error' },
      },
      cost: 0,
    };
    const page0 = [row('a\u2028b "c"\n'), null, failedRow, { ...row('d'), cost: 1e-7 }];
    await insertPages(c, 'run_c', 'ask', [
      { page: 0, rows: [...page0, ...Array.from({ length: 96 }, (_, k) => row(`p0 ${k}`))] },
      { page: 1, rows: [row('p1 0'), null, row('p1 2')] },
    ]);
    const base = newId('item', Date.now(), Math.random);
    const stored = { node: 'ask', count: 103, pageRows: 100, idOffset: 7 };
    const text = async (pieces: AsyncIterable<string>) => {
      let out = '';
      for await (const piece of pieces) out += piece;
      return out;
    };
    for (const [from, live] of [
      [0, false],
      [0, true],
      [2, false],
      [101, true],
    ] as const) {
      const expected = await text(itemLines(storedItems(c, 'run_c', base, stored, from, live)));
      assert.equal(await text(storedItemLines(c, 'run_c', base, stored, from, live)), expected);
      assert.ok(expected.length > 0);
    }
    assert.deepEqual((await readPage(c, 'run_c', 'ask', 0))?.slice(0, 4), page0);
  });

  it('reads pages and run records by `_id` through an index, not a table scan', async () => {
    // The launcher adds the index to new tables within seconds of their creation.
    const plansNow = () =>
      Promise.all([
        planOf(db.store, 'item_blocks', pageId('run_a', 'ask', 0)),
        planOf(db.store, 'runs', 'run_x'),
      ]);
    const indexed = await waitFor(
      async () => {
        const plans = await plansNow();
        return plans.every((p) => p.includes('USING INDEX')) ? plans : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, what: 'the _id lookup index' },
    ).catch(() => undefined);
    const plans = indexed ?? (await plansNow());
    for (const plan of plans) {
      assert.match(plan, /SEARCH \S+ USING INDEX \S+_id_lookup/, plan);
      assert.doesNotMatch(plan, /SCAN/, plan);
    }
  });
});
