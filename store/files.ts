/**
 * Files (D19) in MongoDB GridFS, bucket `files` (collections `files.files` and `files.chunks`).
 * The GridFS `_id` is the public `file_...` id (D5); the owner, name, sniffed MIME type and
 * creation time live in `metadata`. Uploads are streamed: at most one GridFS chunk (255 KiB)
 * plus the sniffing head (16 KiB) is held in memory, whatever the file's size (D10).
 *
 * GridFS writes a file's chunks first and its files document last, so a process that dies mid-way
 * leaves chunks no file names, counted by no quota. Each write therefore records the file's id in
 * `file_uploads` before its first chunk and removes it once the files document is written; the
 * hourly retention removes the chunks of entries older than the longest a write may take
 * (deleteUnfinishedUploads). A file is deleted chunks first, so a delete cut short leaves the file
 * to be deleted again, never chunks nobody can reach.
 */
import { pipeline, Transform, type Readable } from 'node:stream';
import { GridFSBucket, ObjectId, type Db, type GridFSBucketWriteStream } from 'mongodb';
import { SNIFF_BYTES, sniffMime } from '../lib/files/sniff';
import { newId } from '../domain/ids';
import { deleteAll, deleteByIds } from './delete-all';
import { generateId } from './ids';

export interface FileMeta {
  account_id: string;
  name: string;
  mime_type: string;
  /** D29: retention counts from here (store/files.ts deleteFilesOlderThan). */
  created_at: Date;
  /** How the file came here: an upload, a URL input fetched for a run, or a node's output. */
  source: 'upload' | 'input' | 'output';
  run_id: string | null;
}

/** The GridFS files document as this service writes it. */
export interface FileDoc {
  _id: string;
  length: number;
  chunkSize: number;
  uploadDate: Date;
  filename: string;
  metadata: FileMeta;
}

/** The file grew past the limit while it streamed in; nothing of it is kept. */
export class FileTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`file is larger than the ${limitBytes} byte limit`);
    this.name = 'FileTooLargeError';
  }
}

export interface StoreFileOptions {
  accountId: string;
  /** The file name, or how to make one from the sniffed MIME type when the source gave none. */
  name: string | ((mime: string) => string);
  maxBytes: number;
  source: FileMeta['source'];
  runId?: string | null;
}

const BUCKET = 'files';
const buckets = new WeakMap<Db, GridFSBucket>();
const indexed = new WeakMap<Db, Promise<unknown>>();

// GridFS accepts any BSON value as a file id; the driver's types insist on ObjectId.
const gridId = (fileId: string) => fileId as unknown as ObjectId;

/** One bucket per database, so the driver checks its indexes once per process, not per upload. */
function bucketOf(db: Db): GridFSBucket {
  let bucket = buckets.get(db);
  if (!bucket) {
    bucket = new GridFSBucket(db, { bucketName: BUCKET });
    buckets.set(db, bucket);
  }
  return bucket;
}

/** The files collection, typed as this service writes it. */
export function filesCollection(db: Db) {
  return db.collection<FileDoc>(`${BUCKET}.files`);
}

function chunksCollection(db: Db) {
  return db.collection<{ _id: ObjectId; files_id: string; n: number }>(`${BUCKET}.chunks`);
}

/** Files being written: `_id` is the file's id, whose D5 time is when its write began. */
function uploadsCollection(db: Db) {
  return db.collection<{ _id: string }>('file_uploads');
}

/** The index retention queries by (idempotent, once per process). */
function ensureIndexes(db: Db): Promise<unknown> {
  let done = indexed.get(db);
  if (!done) {
    const files = filesCollection(db);
    // One at a time: FerretDB 1.24 drops the connection when createIndexes races another's (store/db.ts).
    done = files
      .createIndex({ 'metadata.created_at': 1 }, { name: 'created_at' })
      .then(() =>
        // An account's uploads, newest first (uploadPage), and every file of it (the quota's sum, storedBytes).
        files.createIndex(
          { 'metadata.account_id': 1, 'metadata.source': 1, _id: -1 },
          { name: 'account_uploads' },
        ),
      )
      .catch((err: unknown) => {
        indexed.delete(db);
        throw err;
      });
    indexed.set(db, done);
  }
  return done;
}

/** Resolves once GridFS has taken `chunk` (and, when it filled a chunk, written it), so nothing is in flight. */
function write(upload: GridFSBucketWriteStream, chunk: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) =>
    upload.write(chunk, (err) => (err ? reject(err) : resolve())),
  );
}

/**
 * Streams `source` into GridFS and returns the stored document. The MIME type is sniffed from the
 * first bytes; over `maxBytes` the partial file is deleted and FileTooLargeError thrown; a failing
 * source (a client that went away) likewise leaves nothing behind.
 */
export async function storeFile(
  db: Db,
  source: AsyncIterable<Uint8Array>,
  opts: StoreFileOptions,
): Promise<FileDoc> {
  // The source is read before anything else is awaited: a stream's first `next()` attaches its
  // error listener, and a source that fails (a truncated multipart part) while nothing listens
  // would be an unhandled 'error' event that takes the whole process down.
  const iterator = source[Symbol.asyncIterator]();
  const indexes = ensureIndexes(db);
  indexes.catch(() => undefined); // awaited below; a source failing first must not leave it unhandled
  const head: Buffer[] = [];
  let headBytes = 0;
  let ended = false;
  try {
    while (headBytes < SNIFF_BYTES) {
      const next = await iterator.next();
      if (next.done) {
        ended = true;
        break;
      }
      head.push(Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength));
      headBytes += next.value.byteLength;
    }
    await indexes;
  } catch (err) {
    await iterator.return?.().catch(() => undefined);
    throw err;
  }
  const first = Buffer.concat(head);
  const mime = sniffMime(first, ended);
  const name = typeof opts.name === 'function' ? opts.name(mime) : opts.name;
  const meta: FileMeta = {
    account_id: opts.accountId,
    name,
    mime_type: mime,
    created_at: new Date(),
    source: opts.source,
    run_id: opts.runId ?? null,
  };
  const id = generateId('file');
  const upload = bucketOf(db).openUploadStreamWithId(gridId(id), name, { metadata: meta });
  upload.on('error', () => undefined); // errors arrive through the write callbacks and `finished` below
  let size = 0;
  try {
    // Before the first chunk: a process dying from here on leaves this entry to find its chunks by.
    await uploadsCollection(db).insertOne({ _id: id });
    const take = async (chunk: Uint8Array) => {
      size += chunk.byteLength;
      if (size > opts.maxBytes) throw new FileTooLargeError(opts.maxBytes);
      await write(upload, chunk);
    };
    if (first.length > 0) await take(first);
    while (!ended) {
      const next = await iterator.next();
      if (next.done) break;
      await take(next.value);
    }
    await new Promise<void>((resolve, reject) =>
      upload.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
  } catch (err) {
    await iterator.return?.().catch(() => undefined);
    await abandon(db, upload, id);
    throw err;
  }
  await finished(db, id);
  return {
    _id: id,
    length: size,
    chunkSize: upload.chunkSizeBytes,
    uploadDate: new Date(),
    filename: name,
    metadata: meta,
  };
}

/** Removes what a failed write stored, then its entry (left if that failed, for the sweep to remove them). */
async function abandon(db: Db, upload: GridFSBucketWriteStream, fileId: string): Promise<void> {
  // Every write was awaited, so no chunk insert is in flight: abort() deletes all that was written.
  const removed = await upload.abort().then(
    () => true,
    () =>
      chunksCollection(db)
        .deleteMany({ files_id: fileId })
        .then(
          () => true,
          () => false,
        ),
  );
  if (removed) await finished(db, fileId);
}

/** A write ended (its files document written, or its chunks removed): its entry goes; left, the sweep finds the file whole. */
async function finished(db: Db, fileId: string): Promise<void> {
  await uploadsCollection(db)
    .deleteOne({ _id: fileId })
    .catch(() => undefined);
}

/** Stores bytes already in memory (a decoded `b64_json` image, a small provider answer). */
export function storeBytes(db: Db, bytes: Uint8Array, opts: StoreFileOptions): Promise<FileDoc> {
  return storeFile(
    db,
    (async function* () {
      yield bytes;
    })(),
    opts,
  );
}

/** A file by id, optionally only if `accountId` owns it (another account's file looks missing). */
export async function findFile(
  db: Db,
  fileId: string,
  accountId?: string,
): Promise<FileDoc | null> {
  // By `_id` alone, the owner compared here: FerretDB decodes every file's record for any other filter.
  const doc = await filesCollection(db).findOne({ _id: fileId });
  return doc && (accountId === undefined || doc.metadata.account_id === accountId) ? doc : null;
}

/**
 * D19: one page of the account's uploads, newest first (ids sort by creation time, D5): up to
 * `limit + 1`, the one more telling whether another page follows.
 */
export function uploadPage(
  db: Db,
  accountId: string,
  opts: { limit: number; startingAfter?: string },
): Promise<FileDoc[]> {
  return filesCollection(db)
    .find({
      'metadata.account_id': accountId,
      'metadata.source': 'upload',
      ...(opts.startingAfter ? { _id: { $lt: opts.startingAfter } } : {}),
    })
    .sort({ _id: -1 })
    .limit(opts.limit + 1)
    .toArray();
}

/**
 * The ids among `fileIds` (a start's file inputs, one each) that `accountId` owns: each read by
 * `_id` (a filter by `$in` and account made FerretDB decode every file's record at each such start).
 */
export async function ownedFileIds(
  db: Db,
  accountId: string,
  fileIds: string[],
): Promise<Set<string>> {
  const owned = await Promise.all(
    [...new Set(fileIds)].map(async (id) => ((await findFile(db, id, accountId)) ? id : null)),
  );
  return new Set(owned.filter((id) => id !== null));
}

/**
 * The bytes every file of the account holds, its uploads and the files its runs made: what the
 * storage quota counts (store/storage-quota.ts). An aggregate over the account's files (a scan on
 * FerretDB).
 */
export async function storedBytes(db: Db, accountId: string): Promise<number> {
  const [sum] = await filesCollection(db)
    .aggregate<{ bytes: number }>([
      { $match: { 'metadata.account_id': accountId } },
      { $group: { _id: null, bytes: { $sum: '$length' } } },
    ])
    .toArray();
  return sum?.bytes ?? 0;
}

/**
 * Streams a file's bytes, or the byte range [start, endExclusive). A file missing chunks (a delete
 * cut short, deleteFile) fails the stream: GridFS reports a gap, but a cursor that ends early
 * (the last chunks gone) it ends as if the file were whole, so the bytes are counted here too.
 */
export function openFileContent(
  db: Db,
  fileId: string,
  range?: { start: number; endExclusive: number },
): Readable {
  const source = bucketOf(db).openDownloadStream(
    gridId(fileId),
    range ? { start: range.start, end: range.endExclusive } : undefined,
  );
  let expected = range ? range.endExclusive - range.start : undefined;
  source.once('file', (doc: FileDoc) => (expected ??= doc.length));
  let served = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      served += chunk.length;
      done(null, chunk);
    },
    flush(done) {
      done(
        served === (expected ?? 0) // no `file` event: an empty file
          ? null
          : new Error(`file ${fileId}: ${served} of its ${expected} bytes are stored`),
      );
    },
  });
  return pipeline(source, counted, () => undefined); // an error of either fails `counted`
}

/**
 * Deletes a file and its chunks; true when this call removed the file (false: it was gone, deleted
 * by another). The chunks go first: a delete cut short leaves the file, found and finished by the
 * next delete (a download of it meanwhile fails, GridFS missing a chunk), never chunks with no file.
 */
export async function deleteFile(db: Db, fileId: string): Promise<boolean> {
  await chunksCollection(db).deleteMany({ files_id: fileId });
  const { deletedCount } = await filesCollection(db).deleteOne({ _id: fileId });
  return deletedCount === 1;
}

/** Files deleted per round by deleteFiles: each round reads the chunks collection once. */
const FILES_PER_ROUND = 1_000;

/**
 * Deletes files and their chunks, FILES_PER_ROUND at a time; returns how many files went. FerretDB
 * filters only `_id` in SQL: a file's chunks by `files_id` are a scan of every account's chunks
 * (24 ms per stored MB), which deleting file by file paid once per file.
 */
export async function deleteFiles(db: Db, fileIds: readonly string[]): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < fileIds.length; i += FILES_PER_ROUND) {
    const round = fileIds.slice(i, i + FILES_PER_ROUND);
    // Chunks first (as deleteFile): a round cut short leaves its files to the next delete.
    await deleteAll(chunksCollection(db), { files_id: { $in: round } });
    deleted += await deleteByIds(filesCollection(db), round);
  }
  return deleted;
}

/**
 * D29 retention: deletes every file created before `date`, and chunks that old with no file (writes
 * that died before `file_uploads` recorded them, which deleteUnfinishedUploads finds sooner).
 * Returns how many files went.
 * Called by the retention job; safe to run concurrently with uploads, as only old data matches.
 */
export async function deleteFilesOlderThan(db: Db, date: Date): Promise<number> {
  await ensureIndexes(db);
  const old = await filesCollection(db)
    .find({ 'metadata.created_at': { $lt: date } }, { projection: { _id: 1 } })
    .toArray();
  await deleteFiles(
    db,
    old.map((f) => f._id),
  );
  // Orphans: chunk `_id`s are ObjectIds, so their creation time says which are old enough.
  const chunks = chunksCollection(db);
  const oldFileIds = (await chunks.distinct('files_id', {
    _id: { $lt: ObjectId.createFromTime(Math.floor(date.getTime() / 1000)) },
  })) as string[];
  if (oldFileIds.length > 0) {
    const alive = new Set(
      (
        await filesCollection(db)
          .find({ _id: { $in: oldFileIds } }, { projection: { _id: 1 } })
          .toArray()
      ).map((d) => d._id),
    );
    const orphans = oldFileIds.filter((id) => !alive.has(id));
    if (orphans.length > 0) await deleteAll(chunks, { files_id: { $in: orphans } });
  }
  return old.length;
}

/**
 * Removes what the writes begun before `startedBefore` left unfinished: the chunks of a file whose
 * files document never came (a process that died mid-upload), and the entry of every such write.
 * Returns how many files' chunks went. `startedBefore` must be older than the longest a write may
 * take, else the chunks of one still under way would go. `file_uploads` holds only writes in
 * progress and those a crash left, so reading it is cheap; the chunks (a scan of every account's on
 * FerretDB) are read only when some were left.
 */
export async function deleteUnfinishedUploads(db: Db, startedBefore: Date): Promise<number> {
  // The smallest file id of that millisecond: every id before it was made earlier (D5).
  const bound = newId('file', startedBefore.getTime(), () => 0);
  const uploads = uploadsCollection(db);
  let removed = 0;
  for (;;) {
    const ids = await uploads
      .find({ _id: { $lt: bound } }, { projection: { _id: 1 }, limit: FILES_PER_ROUND })
      .map((u) => u._id)
      .toArray();
    if (ids.length === 0) return removed;
    // By `_id` one by one (the filter FerretDB does not scan for): few, a crash's leftovers.
    const kept = await Promise.all(
      ids.map((id) => filesCollection(db).findOne({ _id: id }, { projection: { _id: 1 } })),
    );
    const orphans = ids.filter((_, i) => kept[i] === null);
    if (orphans.length > 0) await deleteAll(chunksCollection(db), { files_id: { $in: orphans } });
    removed += orphans.length;
    // Last: a sweep cut short finds them again.
    if ((await deleteByIds(uploads, ids)) === 0) return removed; // removed meanwhile: do not spin
  }
}
