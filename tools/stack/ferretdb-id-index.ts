/**
 * The `_id` index FerretDB 1.24's SQLite backend is missing in practice. FerretDB creates each
 * collection's `_id_` index on the expression `_ferretdb_sjson->"_id"`, but its `_id` pushdown asks
 * `WHERE _ferretdb_sjson->'$._id' = ?`; SQLite matches index expressions by their text, so every
 * read by `_id` was a table scan in SQLite, stopping at the match (its cost grew with the bytes
 * stored before the document: 15 ms for a 200 KB page at the start of a 100 MB collection,
 * 300 ms at its end, and ~0.4 s for a page of a 100,000-row run's output, which made a results
 * file of 1,000 pages take minutes). This adds, next to FerretDB's own, an index on the exact
 * expression its queries use, so a read by `_id` is an index lookup as on MongoDB (D35's stored
 * pages, run records, holds). The index is SQLite's alone: FerretDB neither lists nor drops it, a
 * dropped collection takes it with its table, and writes keep it up to date.
 *
 * Tables appear when the service first creates a collection, after FerretDB started, so the
 * launcher looks every few seconds (one `sqlite3` call per database file; a create only when a
 * table lacks the index). Without the `sqlite3` command-line tool nothing changes (reads scan).
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Suffix of the indexes this adds (FerretDB's own end in `__id_`). */
const SUFFIX = '_id_lookup';

/** FerretDB's table names are `<collection>_<hash>` (dots allowed); anything else is left alone. */
const TABLE_NAME = /^[A-Za-z0-9_.$-]+$/;

async function sqlite(file: string, sql: string): Promise<string> {
  const { stdout } = await run('sqlite3', ['-cmd', '.timeout 5000', file, sql], {
    timeout: 60_000,
  });
  return stdout;
}

/** Adds the missing `_id` lookup index to every collection table of every database in `dataDir/data`. */
export async function indexIdLookups(dataDir: string): Promise<number> {
  let added = 0;
  const dir = path.join(dataDir, 'data');
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.sqlite'));
  } catch {
    return 0;
  }
  for (const f of files) {
    const file = path.join(dir, f);
    const out = await sqlite(
      file,
      `SELECT t.table_name FROM _ferretdb_collections t WHERE NOT EXISTS (SELECT 1 FROM sqlite_master i WHERE i.type = 'index' AND i.name = t.table_name || '${SUFFIX}');`,
    ).catch(() => ''); // a database FerretDB is still creating: next time
    const tables = out
      .split('\n')
      .map((s) => s.trim())
      .filter((s) => TABLE_NAME.test(s));
    if (tables.length === 0) continue;
    const sql = tables
      .map(
        (t) => `CREATE INDEX IF NOT EXISTS "${t}${SUFFIX}" ON "${t}" (_ferretdb_sjson->'$._id');`,
      )
      .join('\n');
    await sqlite(file, sql);
    added += tables.length;
  }
  return added;
}

/** Keeps adding the index to new tables every `intervalMs` until the returned stop is called. */
export function watchIdLookups(dataDir: string, intervalMs = 2_000): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const tick = async () => {
    try {
      await indexIdLookups(dataDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // no sqlite3 tool: reads scan
    }
    if (!stopped) timer = setTimeout(() => void tick(), intervalMs).unref();
  };
  void tick();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
