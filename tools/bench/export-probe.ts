/**
 * The JSON Lines export of a stored output (D35) against its bare store reads, without running a
 * workflow: seeds one run's item_blocks pages (`--rows`, answers of `--answer` bytes) into its own
 * FerretDB, then times (1) the bare `_id` reads of every page one at a time, (2) the same with a
 * window of concurrent reads, (3) the service's own export (store/item-blocks.ts storedItems and
 * api/runs/output-items.ts outputLines) to a sink, with the process's peak RSS.
 *
 *   npx tsx tools/bench/export-probe.ts --rows 100000 --answer 2000
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { execFileSync } from 'node:child_process';
import { startFerretDb } from '../stack';
import { indexIdLookups } from '../stack/ferretdb-id-index';
import { connectStore } from '../../store/db';
import { insertPages, storedItemLines, storedItems } from '../../store/item-blocks';
import { pageId, PAGE_ROWS, type StoredRow } from '../../domain/item-blocks';
import { newId } from '../../domain/ids';
import { itemLines } from '../../api/runs/output-items';

const WORDS =
  'the of and a to in is you that it he was for on are as with his they at be this have from or one had by word but not what all were we when your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into time has look two more write go see number no way could people my than first water been call who its now find long down day did get come made may part'.split(
    ' ',
  );

/** Text of `n` characters that compresses like prose (~3x), unlike a run of one letter. */
function prose(n: number, seed: number): string {
  let s = '';
  let x = seed;
  while (s.length < n) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    s += `${WORDS[x % WORDS.length]} `;
  }
  return s.slice(0, n);
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

async function main(): Promise<void> {
  const rows = arg('rows', 100_000);
  const answer = arg('answer', 2_000);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wrs-export-probe-'));
  const db = await startFerretDb({ dataDir });
  const store = await connectStore({ uri: db.uri, dbName: 'probe' });
  const c = store.collections;
  let peakRss = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 50);
  try {
    const runId = newId('run', Date.now(), Math.random);
    const node = 'ask';
    const pages = Math.ceil(rows / PAGE_ROWS);
    const t0 = performance.now();
    for (let p = 0; p < pages; p += 10) {
      const batch = [];
      for (let q = p; q < Math.min(p + 10, pages); q++) {
        const pageRows: StoredRow[] = [];
        for (let k = q * PAGE_ROWS; k < Math.min((q + 1) * PAGE_ROWS, rows); k++)
          pageRows.push({
            item: { status: 'completed', parts: [{ type: 'text', text: prose(answer, k) }] },
            cost: 0.001,
          });
        batch.push({ page: q, rows: pageRows });
      }
      await insertPages(c, runId, node, batch);
    }
    console.log(
      `seeded ${rows} rows in ${pages} pages: ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );

    const bare = async (window: number): Promise<number> => {
      const t = performance.now();
      let next = 0;
      let bytes = 0;
      await Promise.all(
        Array.from({ length: window }, async () => {
          while (next < pages) {
            const doc = await c.itemBlocks.findOne({ _id: pageId(runId, node, next++) });
            bytes += doc?.rows_z?.length() ?? doc?.rows_json?.length ?? 0;
          }
        }),
      );
      const ms = performance.now() - t;
      console.log(
        `bare _id reads, window ${window}: ${(ms / 1000).toFixed(2)} s (${(bytes / 2 ** 20).toFixed(0)} MB)`,
      );
      return ms;
    };
    // Before: FerretDB's own indexes only (every `_id` read a SQLite scan), a sample of pages.
    const file = path.join(dataDir, 'data', 'probe.sqlite');
    await indexIdLookups(dataDir);
    const table = execFileSync('sqlite3', [
      file,
      "SELECT table_name FROM _ferretdb_collections WHERE name = 'item_blocks'",
    ])
      .toString()
      .trim();
    execFileSync('sqlite3', [file, `DROP INDEX "${table}_id_lookup"`]);
    const sample = [
      0,
      Math.floor(pages / 4),
      Math.floor(pages / 2),
      Math.floor((3 * pages) / 4),
      pages - 1,
    ];
    let scanMs = 0;
    for (const p of sample) {
      const t = performance.now();
      await c.itemBlocks.findOne({ _id: pageId(runId, node, p) });
      const ms = performance.now() - t;
      scanMs += ms;
      console.log(`  scan read of page ${p}: ${ms.toFixed(0)} ms`);
    }
    console.log(
      `without the lookup index: ${(scanMs / sample.length).toFixed(0)} ms a page on average, ~${(((scanMs / sample.length) * pages) / 1000).toFixed(0)} s for all ${pages} one at a time`,
    );
    await indexIdLookups(dataDir);
    for (const w of [1, 4, 8, 12]) await bare(w);

    const stored = { node, count: rows, pageRows: PAGE_ROWS, idOffset: 1 };
    const base = newId('item', Date.now(), Math.random);
    const exportOf = async (label: string, pieces: AsyncIterable<string>) => {
      peakRss = 0;
      const t = performance.now();
      const cpu = process.cpuUsage();
      let bytes = 0;
      let items = 0;
      for await (const piece of pieces) {
        bytes += piece.length;
        for (let i = piece.indexOf('\n'); i >= 0; i = piece.indexOf('\n', i + 1)) items++;
      }
      const ms = performance.now() - t;
      const used = process.cpuUsage(cpu);
      console.log(
        `${label}: ${(ms / 1000).toFixed(2)} s, ${items} items, ${(bytes / 2 ** 20).toFixed(0)} MB, this process's CPU ${((used.user + used.system) / 1e6).toFixed(2)} s, peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MB`,
      );
    };
    // The results file as the API streams it, and (for comparison) through item objects.
    await exportOf('service export', storedItemLines(c, runId, base, stored, 0, false));
    await exportOf(
      'export through item objects',
      itemLines(storedItems(c, runId, base, stored, 0, false)),
    );
  } finally {
    clearInterval(sampler);
    await store.close();
    await db.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
