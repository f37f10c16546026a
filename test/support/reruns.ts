/**
 * What the re-run tests (D38) share: a re-run of failed items, every item of an output through the
 * paged `/outputs` reads, and a stored page of a big node as it is stored (its base and its lines).
 */
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { inflateRaw } from 'node:zlib';
import { pageId } from '../../domain/item-blocks';
import { call } from './http';
import type { ServiceContext } from './use-service';

const inflate = promisify(inflateRaw);

/** Dollars as the ledger rounds them (to 1e-9). */
export const money = (usd: number) => Math.round(usd * 1e9) / 1e9;

export function rerunHelpers(ctx: ServiceContext) {
  /** Starts a re-run of `runId`'s failed items; its run id. */
  const rerun = async (runId: string): Promise<string> => {
    const res = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/rerun`, {
      key: ctx.key,
      body: { items: 'failed' },
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    return res.body.run_id;
  };
  /** Every item of output `answers` through the paged `/outputs` reads (100 a page, by cursor). */
  const pagedItems = async (runId: string) => {
    const items: any[] = [];
    let after: string | undefined;
    for (;;) {
      const query = `limit=100${after ? `&starting_after=${after}` : ''}`;
      const res = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/answers?${query}`, {
        key: ctx.key,
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      items.push(...res.body.data);
      if (!res.body.has_more) return items;
      after = res.body.data.at(-1).id;
    }
  };
  /** A stored page of run `runId`'s node `ask`, as stored: its base and its lines. */
  const storedPage = async (runId: string, page: number) => {
    const doc = await ctx.svc.store.collections.itemBlocks.findOne({
      _id: pageId(runId, 'ask', page),
    });
    assert.ok(doc?.rows_z, `page ${page} of ${runId}`);
    return { base: doc.base, lines: (await inflate(doc.rows_z.buffer)).toString().split('\n') };
  };
  return { rerun, pagedItems, storedPage };
}
