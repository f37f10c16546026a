/**
 * D31/D35: a list node's rows from an uploaded file. The file is read as a stream (lib/files/rows.ts)
 * and its rows are written to the store in blocks (domain/item-blocks.ts), a few blocks per round
 * trip; the workflow gets only the count, so no row ever travels through Temporal's history. A
 * malformed file fails the run, naming the input and the line, before any node after it runs.
 * A retry writes the same blocks again (replaced by `_id`), so it changes nothing.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { BLOCK_ROWS, type StoredRow } from '../domain/item-blocks';
import { completed, valuePart } from '../domain/items';
import { formatOf, readRows, RowsError } from '../lib/files/rows';
import type { Collections } from '../store/db';
import { findFile, openFileContent } from '../store/files';
import { writeBlocks } from '../store/item-blocks';
import type { FileDeps } from './files';
import { heartbeating } from './heartbeat';

export interface FileRowsRequest {
  runId: string;
  accountId?: string;
  /** The list node whose rows these are: the blocks' owner. */
  nodeId: string;
  /** The input's normalized label, for messages. */
  key: string;
  fileId: string;
  maxRows: number;
}

/** Blocks written per round trip: 10,000 rows of ~200 bytes, ~2 MB. */
const BLOCKS_PER_WRITE = 10;

const refused = (message: string) => ApplicationFailure.nonRetryable(message, 'InvalidInput');

/** Builds the activity that reads a file's rows into stored blocks and answers how many there are. */
export function createFileRowsActivity(deps: {
  files: () => FileDeps;
  collections: Pick<Collections, 'itemBlocks'>;
}) {
  const load = async (req: FileRowsRequest): Promise<{ count: number }> => {
    const { db } = deps.files();
    const doc = await findFile(db, req.fileId, req.accountId);
    if (!doc) throw refused(`input '${req.key}': file ${req.fileId} does not exist`);
    const format = formatOf(doc.metadata.name, doc.metadata.mime_type);
    let count = 0;
    let block: StoredRow[] = [];
    let pending: Array<{ block: number; rows: StoredRow[] }> = [];
    const flush = async () => {
      await writeBlocks(deps.collections, req.runId, req.nodeId, pending);
      pending = [];
    };
    const stream = openFileContent(db, req.fileId);
    try {
      for await (const row of readRows(stream, format, req.maxRows)) {
        block.push({ item: completed(valuePart(row)), cost: 0 });
        count++;
        if (block.length === BLOCK_ROWS) {
          pending.push({ block: count / BLOCK_ROWS - 1, rows: block });
          block = [];
          if (pending.length === BLOCKS_PER_WRITE) await flush();
        }
      }
    } catch (err) {
      if (err instanceof RowsError) throw refused(`input '${req.key}': ${err.message}`);
      throw err;
    } finally {
      stream.destroy();
    }
    if (block.length > 0) pending.push({ block: Math.floor(count / BLOCK_ROWS), rows: block });
    await flush();
    return { count };
  };
  return function loadFileRows(req: FileRowsRequest): Promise<{ count: number }> {
    return heartbeating(() => load(req));
  };
}
