/** domain/items.ts: an item packed for a block's input (D35) and unpacked back exactly. */
import assert from 'node:assert/strict';
import { completed, failed, packItem, unpackItem, upstreamFailed } from '../../domain/items';
import type { Item } from '../../domain/parts';

describe('packed items (domain/items.ts, D35)', () => {
  it('packs a text or JSON row to about its value and unpacks it exactly', () => {
    const rows: Item[] = [
      completed({ type: 'text', text: 'a row' }),
      completed({ type: 'text', text: '' }),
      completed({ type: 'json', data: 0 }),
      completed({ type: 'json', data: ['a', 1] }),
      completed({ type: 'json', data: null }),
      completed({ type: 'json', data: { name: 'Ada' } }),
    ];
    const packed = rows.map(packItem);
    assert.deepEqual(packed, ['a row', '', [0], [['a', 1]], [null], [{ name: 'Ada' }]]);
    // As the activity gets it: through JSON.
    const back = (JSON.parse(JSON.stringify(packed)) as typeof packed).map(unpackItem);
    assert.deepEqual(back, rows);
    assert.ok(JSON.stringify(packed).length < JSON.stringify(rows).length / 4);
  });

  it('keeps any other item whole', () => {
    const others: Item[] = [
      failed({ message: 'no', type: 'upstream_failed' }),
      completed({ type: 'text', text: 'a' }, { type: 'text', text: 'b' }),
      completed({ type: 'image', url: 'https://example.test/a.png', mime_type: 'image/png' }),
      completed(),
    ];
    for (const item of others) {
      assert.equal(packItem(item), item);
      assert.deepEqual(unpackItem(JSON.parse(JSON.stringify(packItem(item)))), item);
    }
  });

  it('keeps an upstream failure within 1,000 characters, its first cause at the end (a chain of 500 nodes added a prefix each)', () => {
    let item = failed({ message: 'the provider refused', type: 'provider_error' });
    for (let hop = 0; hop < 500; hop++)
      item = upstreamFailed(`input 'p' item 0 from node 'n${hop}'`, item.error?.message);
    assert.ok(item.error!.message.length <= 1_000, `${item.error!.message.length}`);
    assert.match(
      item.error!.message,
      /^input 'p' item 0 from node 'n499' failed: ….*the provider refused$/,
    );
    assert.equal(item.error!.type, 'upstream_failed');
  });
});
