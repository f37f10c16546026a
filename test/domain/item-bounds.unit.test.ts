/**
 * The bounds of one row's item (domain/item-blocks.ts withinRowBound, boundedTextItem): a row of a
 * big list holds at most 128 KiB, so a page of 100 stays one document, the one row of a stored
 * list of one 8 MiB; an item handed on through the history at most 1 MiB, and the rows of one node
 * 16 MiB together (the history's room for rows answering at once). Past them the row's item
 * fails in place, naming the bound; a text node's item is never built when its text alone passes.
 */
import assert from 'node:assert/strict';
import {
  boundedTextItem,
  INLINE_NODE_MAX_BYTES,
  INLINE_ROW_MAX_BYTES,
  inlineRowMaxBytes,
  STORED_ITEM_MAX_BYTES,
  STORED_ROW_MAX_BYTES,
  storedRowMaxBytes,
  withinRowBound,
} from '../../domain/item-blocks';
import { completed } from '../../domain/items';

const text = (bytes: number) => completed({ type: 'text', text: 'a'.repeat(bytes) });

describe('row bounds (withinRowBound)', () => {
  it('keeps items within the bound as they are', () => {
    const items = [text(STORED_ROW_MAX_BYTES - 100)];
    assert.equal(withinRowBound(items, STORED_ROW_MAX_BYTES), items);
  });

  it("fails a row whose items together pass it, naming the bound; a list's items count together", () => {
    const [stored] = withinRowBound([text(STORED_ROW_MAX_BYTES)], STORED_ROW_MAX_BYTES);
    assert.deepEqual(stored, {
      status: 'failed',
      parts: [],
      error: {
        message:
          'the answer is over the 131072 byte limit of one item: a row of a big list (D35), or of a node of 128 rows or more, holds at most 128 KiB',
        type: 'provider_error',
      },
    });
    const half = text(INLINE_ROW_MAX_BYTES / 2);
    const [inline] = withinRowBound([half, half], INLINE_ROW_MAX_BYTES);
    assert.equal(
      inline.error?.message,
      'the answer is over the 1048576 byte limit of one item: an item handed on through the run holds at most 1 MiB',
    );
  });

  it('gives the only row of a stored list of one (a big join, what runs on from it) 8 MiB, every other stored row 128 KiB', () => {
    assert.equal(storedRowMaxBytes({ first: 0, count: 1 }), STORED_ITEM_MAX_BYTES);
    assert.equal(storedRowMaxBytes({ first: 0, count: 2 }), STORED_ROW_MAX_BYTES);
    assert.equal(
      storedRowMaxBytes({ first: 1_000, count: 1 }),
      STORED_ROW_MAX_BYTES,
      'a last block',
    );
  });

  it("gives an inline node's rows 1 MiB each up to 16, then 16 MiB together, never under 128 KiB a row", () => {
    assert.deepEqual([1, 16, 17, 100, 128, 1_000].map(inlineRowMaxBytes), [
      INLINE_ROW_MAX_BYTES,
      INLINE_ROW_MAX_BYTES,
      Math.floor(INLINE_NODE_MAX_BYTES / 17),
      167_772,
      STORED_ROW_MAX_BYTES,
      STORED_ROW_MAX_BYTES,
    ]);
    const [shared] = withinRowBound([text(200_000)], inlineRowMaxBytes(100));
    assert.equal(
      shared.error?.message,
      'the answer is over the 167772 byte limit of one item: the rows of a node handed on through the run hold at most 16 MiB together (1 MiB a row up to 16 rows)',
    );
  });

  describe("a text node's item (boundedTextItem)", () => {
    const ports = { a: text(200_000), q: completed({ type: 'text', text: '"' }) };

    it('fills a template within the bound as textItem does', () => {
      assert.deepEqual(boundedTextItem({ template: 'Q: {{q}}' }, ports, INLINE_ROW_MAX_BYTES), {
        status: 'completed',
        parts: [{ type: 'text', text: 'Q: "' }],
      });
    });

    it('fails a template that repeats a placeholder past the bound, naming it, without building the text', () => {
      // 5,000 copies of 200 KB would be a 1 GB string: more than the process may hold.
      const item = boundedTextItem(
        { template: '{{a}}'.repeat(5_000) },
        ports,
        STORED_ROW_MAX_BYTES,
      );
      assert.deepEqual(item, {
        status: 'failed',
        parts: [],
        error: {
          message:
            'the filled template is over the 131072 byte limit of one item: a row of a big list (D35), or of a node of 128 rows or more, holds at most 128 KiB',
          type: 'template_too_large',
        },
      });
    });

    it("counts the item's JSON, so a text of quotes within the bound in characters still fails", () => {
      const quotes = { template: '{{q}}'.repeat(100_000) }; // 100,000 characters, 200,000 in JSON
      assert.equal(boundedTextItem(quotes, ports, 150_000).status, 'failed');
      assert.equal(boundedTextItem(quotes, ports, 250_000).status, 'completed');
    });
  });
});
