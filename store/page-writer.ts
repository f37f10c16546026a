/**
 * A stored list written in row order by one activity (a file's rows, a batch of a stored list:
 * D35): rows gathered into pages of PAGE_ROWS, pages inserted 100 a round trip (10,000 rows of
 * ~200 bytes, ~2 MB), so memory holds one round trip's pages. A retry writes the same pages again,
 * found there already (store/item-blocks.ts insertPages), so it changes nothing. A `meter` is told
 * what each round trip adds before it is written, and may refuse it (the storage quota, D19); it
 * holds those bytes until the round trip is recorded or has failed.
 */
import { itemLength, PAGE_ROWS, type StoredRow } from '../domain/item-blocks';
import type { Collections } from './db';
import { insertPages, type PageWrite } from './item-blocks';

const PAGES_PER_WRITE = 100;

/** What a list's writes are measured against: `take` before a round trip (it may throw), `record` after. */
export interface PageMeter {
  /** The items' JSON bytes the next round trip stores. */
  take(bytes: number): Promise<void>;
  /** The round trip is stored. */
  record(): Promise<void>;
  /** The round trip failed: what `take` counted is not stored (as far as the meter knows). */
  abandon(): Promise<void>;
}

export class PageWriter {
  /** Rows taken so far. */
  count = 0;
  private page: StoredRow[] = [];
  private pending: PageWrite[] = [];

  constructor(
    private readonly c: Pick<Collections, 'itemBlocks'>,
    private readonly runId: string,
    private readonly nodeId: string,
    private readonly meter?: PageMeter,
  ) {}

  /** Takes the next row; writes a round trip's pages once they are full. */
  async add(row: StoredRow): Promise<void> {
    this.page.push(row);
    this.count++;
    if (this.page.length < PAGE_ROWS) return;
    this.pending.push({ page: this.count / PAGE_ROWS - 1, rows: this.page });
    this.page = [];
    if (this.pending.length === PAGES_PER_WRITE) await this.flush();
  }

  /** Writes what is left (a last page may be short) and answers how many rows the list has. */
  async end(): Promise<number> {
    if (this.page.length > 0)
      this.pending.push({ page: Math.floor(this.count / PAGE_ROWS), rows: this.page });
    this.page = [];
    await this.flush();
    return this.count;
  }

  private async flush(): Promise<void> {
    const { meter, pending } = this;
    if (meter) {
      let bytes = 0;
      for (const { rows } of pending)
        for (const row of rows) bytes += row ? itemLength(row.item) : 0;
      await meter.take(bytes);
    }
    try {
      await insertPages(this.c, this.runId, this.nodeId, pending);
      this.pending = [];
      await meter?.record();
    } catch (err) {
      await meter?.abandon();
      throw err;
    }
  }
}
