/**
 * D31/D35: a list node's rows from an uploaded file. The file is read as a stream (lib/files/rows.ts)
 * and its rows are written to the store in pages (store/page-writer.ts), counted in the account's
 * storage quota (activities/list-storage.ts); the workflow gets only the count, so no row ever
 * travels through Temporal's history. The file is the run's account's, or the input's default (a
 * file of the workflow's owner, D19). A malformed file fails the run, naming the input and the
 * line, before any node after it runs. A retry inserts the same pages again, which are found
 * there already, so it changes nothing.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { STORED_ROW_MAX_BYTES } from '../domain/item-blocks';
import { completed, valuePart } from '../domain/items';
import { formatOf, readRows, RowsError } from '../lib/files/rows';
import type { Collections } from '../store/db';
import { findFile, openFileContent } from '../store/files';
import { PageWriter } from '../store/page-writer';
import { runInputDefault } from '../store/workflows';
import { runAccount, type FileDeps } from './files';
import { heartbeating } from './heartbeat';
import { ListStorage } from './list-storage';

export interface FileRowsRequest {
  runId: string;
  accountId?: string;
  /** The list node whose rows these are: the pages' owner. */
  nodeId: string;
  /** The input's normalized label, for messages. */
  key: string;
  fileId: string;
  maxRows: number;
}

const refused = (message: string) => ApplicationFailure.nonRetryable(message, 'InvalidInput');

/** Builds the activity that reads a file's rows into stored pages and answers how many there are. */
export function createFileRowsActivity(deps: {
  files: () => FileDeps;
  collections: Pick<Collections, 'itemBlocks' | 'itemUsage' | 'runs' | 'workflowVersions'>;
}) {
  /** D19: the input's default, a file of the workflow's owner, read for another account's run of a public workflow. */
  const ownersDefault = async (req: FileRowsRequest) => {
    const given = await runInputDefault(deps.collections, req.runId, req.key);
    return given?.value === req.fileId ? findFile(deps.files().db, req.fileId, given.owner) : null;
  };
  const load = async (req: FileRowsRequest): Promise<{ count: number }> => {
    const { db, quota } = deps.files();
    // The run's account (read from its record for runs that did not pass it): never any account's file.
    const accountId = await runAccount(deps, req);
    const doc = (await findFile(db, req.fileId, accountId)) ?? (await ownersDefault(req));
    if (!doc) throw refused(`input '${req.key}': file ${req.fileId} does not exist`);
    const format = formatOf(doc.metadata.name, doc.metadata.mime_type);
    // D19: the copy of the file's rows counts in the account's storage, as its every other list.
    const storage = new ListStorage(deps.collections, quota, req, `input '${req.key}'`);
    const pages = new PageWriter(deps.collections, req.runId, req.nodeId, storage);
    const stream = openFileContent(db, req.fileId);
    try {
      for await (const row of readRows(stream, format, req.maxRows, STORED_ROW_MAX_BYTES))
        await pages.add({ item: completed(valuePart(row)), cost: 0 });
    } catch (err) {
      if (err instanceof RowsError) throw refused(`input '${req.key}': ${err.message}`);
      throw err;
    } finally {
      stream.destroy();
    }
    return { count: await pages.end() };
  };
  return function loadFileRows(req: FileRowsRequest): Promise<{ count: number }> {
    return heartbeating(() => load(req));
  };
}
