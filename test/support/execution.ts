/**
 * What the workflow execution tests (test/workflows/*.test.ts) share: the price of the fake
 * provider's calls and checks of run output.
 */
import assert from 'node:assert/strict';
import { isId } from '../../domain/ids';

export const PRICES = JSON.stringify({ 'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 } });
// The fake reports 100 prompt and 50 completion tokens per call: 100 * $1/M + 50 * $2/M.
export const LLM_CALL_USD = (100 * 1 + 50 * 2) / 1e6;
export const START_FEE_USD = 0.001;

/** The text of each item's first part. */
export function texts(items: any[]): string[] {
  return items.map((item) => item.parts[0]?.text);
}

/** Every output item is well-formed: an `item_` id, unique in the run, and item_index 0..n-1 per key. */
export function assertItemShape(run: any): void {
  const ids = new Set<string>();
  for (const [key, items] of Object.entries<any[]>(run.output)) {
    items.forEach((item, i) => {
      assert.ok(isId('item', item.id), `${key}[${i}] id ${item.id}`);
      assert.ok(!ids.has(item.id), `${key}[${i}] id ${item.id} is not unique`);
      ids.add(item.id);
      assert.equal(item.item_index, i, `${key}[${i}] item_index`);
      assert.ok(Array.isArray(item.parts), `${key}[${i}] parts`);
    });
  }
}
