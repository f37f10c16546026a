/**
 * D38: reading what a re-run of failed items carries over from its parent run. The API checked
 * that the parent is the caller's and finished; this side checks the account again (the
 * parent's id is a reference in the re-run's arguments) and treats a parent deleted meanwhile
 * (D39) as one with nothing to carry: every row then runs. Nothing here bills.
 */
import type { Item } from '../domain/parts';
import { PAGE_ROWS, pagesOf, type StoredRow } from '../domain/item-blocks';
import type { Collections } from '../store/db';
import { hasFirstPage, readPage } from '../store/item-blocks';
import { findRunWithoutLog } from '../store/runs';
import type { CarrySource } from '../workflows/carry-over';

type C = Pick<Collections, 'runs' | 'runChunks' | 'itemBlocks'>;

export interface LoadCarryOverRequest {
  runId: string;
  accountId: string;
  parentRunId: string;
  /** The run's I/O nodes: which of them the parent stored in pages (D35). */
  ioNodes: string[];
  /** I/O nodes whose items are a result of the parent (node id → normalized result label). */
  feeders: Record<string, string>;
}

/** Builds the activity that tells the workflow what the parent holds (small nodes' items come in its answer). */
export function createLoadCarryOverActivity(collections: C) {
  return async function loadCarryOver(req: LoadCarryOverRequest): Promise<CarrySource> {
    // The record alone, its chunks not joined: an output kept in chunks (a big inline list) is not
    // an AI node's (those are at most 2 × concurrency rows; bigger ones are stored pages).
    const parent = await findRunWithoutLog(collections, req.parentRunId);
    if (!parent || parent.account_id !== req.accountId || !parent.finalized)
      return { stored: [], inline: {} };
    // A big node's first page exists once the parent finished any row of it; by `_id`, one round trip each.
    const probes = await Promise.all(
      req.ioNodes.map((node) => hasFirstPage(collections, parent._id, node)),
    );
    const stored = req.ioNodes.filter((_, i) => probes[i]);
    const inline: CarrySource['inline'] = {};
    const storedLabels = new Set(Object.keys(parent.stored_outputs ?? {}));
    for (const [node, label] of Object.entries(req.feeders)) {
      if (stored.includes(node) || storedLabels.has(label)) continue;
      const items = parent.chunks ? undefined : parent.output?.[label];
      if (!items) continue; // unknown: the node runs again whole, and what follows it
      inline[node] = items
        .filter((item) => item.status === 'completed')
        .map((item): [number, Item] => [
          item.item_index,
          { status: 'completed', parts: item.parts },
        ]);
    }
    return { stored, inline };
  };
}

/**
 * Fills the rows [first, first + count) that the re-run has not stored yet with the parent's
 * completed rows of the same node, marked carried (cost 0): the block then runs only the rest, and
 * its pages reference the carried rows (a line `^`, the parent as the page's base) instead of
 * copying them, so deleting the parent (D39) leaves nothing of its rows readable here.
 */
export async function fillCarried(
  c: Pick<Collections, 'itemBlocks'>,
  parentRunId: string,
  nodeId: string,
  first: number,
  rows: Array<StoredRow | null>,
  existing: Set<number>,
): Promise<number> {
  const pages = pagesOf(first, first + rows.length).filter((p) => !existing.has(p));
  const read = await Promise.all(pages.map((p) => readPage(c, parentRunId, nodeId, p)));
  let carried = 0;
  pages.forEach((p, i) => {
    read[i]?.forEach((row, k) => {
      const at = p * PAGE_ROWS + k - first;
      if (!row || row.item.status !== 'completed' || at < 0 || at >= rows.length || rows[at])
        return;
      rows[at] = { item: row.item, cost: 0, carried: true };
      carried++;
    });
  });
  return carried;
}
