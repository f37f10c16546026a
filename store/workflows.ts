/** Published workflows and their immutable, numbered versions (D1, D2, D26). */
import type { Filter } from 'mongodb';
import type { WorkflowDocument } from '../domain/graph';
import type { Contract } from '../domain/contract';
import { isId } from '../domain/ids';
import type { Collections } from './db';
import { deleteAll } from './delete-all';
import type { WorkflowDoc, WorkflowVersionDoc } from './documents';
import { generateId } from './ids';
import { isDuplicateKey } from './ledger';

type WorkflowCollections = Pick<
  Collections,
  'workflows' | 'workflowVersions' | 'workflowVersionNumbers'
>;

/**
 * Publishes a graph: a new workflow, or the next version of the account's workflow with that slug.
 * `bytes` (what the version holds) is added to the workflow's `stored_bytes` right after the
 * version is stored: a publish cut short between the two leaves the quota one version low until
 * `workflows recount-storage`, never counting a version that was not stored (added first, a crash
 * before the insert left the account's quota holding bytes of nothing, for good).
 */
export async function insertWorkflowVersion(
  c: WorkflowCollections,
  accountId: string,
  graph: WorkflowDocument,
  contract: Contract,
  bytes = 0,
): Promise<{ workflow: WorkflowDoc; version: WorkflowVersionDoc; finished: WorkflowDoc | null }> {
  const { workflow, previous, finished } = await upsertWorkflow(c, accountId, graph);
  // The newest version as the record said before this publish touched it (else found, once).
  const newest = previous && (freshLatest(previous) ?? (await scanLatest(c, workflow._id)));
  let number = (newest?.version ?? 0) + 1;
  // Version numbers come from the versions themselves: the unique (workflow_id, version) index
  // turns a concurrent publish into a retry with the next number instead of a lost version. Each
  // lost race means another publish won, so n publishes at once all end within n attempts.
  for (let attempt = 0; ; attempt++, number++) {
    const version: WorkflowVersionDoc = {
      _id: generateId('wfv'),
      workflow_id: workflow._id,
      account_id: accountId,
      version: number,
      graph,
      contract,
      created_at: new Date(),
    };
    try {
      await c.workflowVersions.insertOne(version);
    } catch (err) {
      if (!isDuplicateKey(err) || attempt >= MAX_VERSION_ATTEMPTS) throw err;
      continue;
    }
    if (bytes > 0)
      await c.workflows.updateOne({ _id: workflow._id }, { $inc: { stored_bytes: bytes } });
    await writeNumber(c, workflow._id, number, version._id);
    await setLatest(c, workflow._id, { id: version._id, version: number }, workflow.updated_at);
    return {
      workflow: { ...workflow, stored_bytes: (workflow.stored_bytes ?? 0) + bytes },
      version,
      finished,
    };
  }
}

/** Publishes of one slug at once that all get a version (20 at once returned six 500s with 5). */
const MAX_VERSION_ATTEMPTS = 1_000;

/**
 * The workflow record after this publish, its version's bytes not yet counted, and before it
 * (null: the publish created it). A record of the slug marked `deleting` is not published
 * into: its delete, cut short, is finished first (`finished`, removed by this call) and the slug
 * published anew, version 1 (D26).
 */
async function upsertWorkflow(
  c: WorkflowCollections,
  accountId: string,
  graph: WorkflowDocument,
): Promise<{ workflow: WorkflowDoc; previous: WorkflowDoc | null; finished: WorkflowDoc | null }> {
  const now = new Date();
  const set = { name: graph.name ?? null, public: graph.public ?? false, updated_at: now };
  let finished: WorkflowDoc | null = null;
  for (let attempt = 0; ; attempt++) {
    const created: WorkflowDoc = {
      _id: generateId('wf'),
      account_id: accountId,
      slug: graph.slug,
      created_at: now,
      ...set,
      stored_bytes: 0,
    };
    try {
      // The record before: its `latest` is the newest version unless a publish since left it unset.
      const previous = await c.workflows.findOneAndUpdate(
        { account_id: accountId, slug: graph.slug, deleting: { $exists: false } },
        {
          $set: set,
          $setOnInsert: {
            _id: created._id,
            account_id: accountId,
            slug: graph.slug,
            created_at: now,
            stored_bytes: 0,
          },
        },
        { upsert: true, returnDocument: 'before' },
      );
      if (!previous) return { workflow: created, previous: null, finished };
      return { workflow: { ...previous, ...set }, previous, finished };
    } catch (err) {
      // Two first publishes of one slug race on the unique index: the loser takes the winner's
      // document. Or the slug's record is being deleted: its delete is finished, then published anew.
      if (!isDuplicateKey(err) || attempt >= 3) throw err;
      const held = await c.workflows.findOne({ account_id: accountId, slug: graph.slug });
      if (held?.deleting && (await deleteWorkflowVersions(c, held._id))) finished = held;
    }
  }
}

/**
 * The bytes the account's published versions hold (the sum of its workflows' `stored_bytes`): what
 * its workflow quota counts (store/storage-quota.ts). A scan of the workflows, not of their
 * versions, on FerretDB (a workflow is a small document; a version holds a whole graph).
 */
export async function publishedBytes(
  c: Pick<Collections, 'workflows'>,
  accountId: string,
): Promise<number> {
  const [sum] = await c.workflows
    .aggregate<{ bytes: number }>([
      { $match: { account_id: accountId } },
      { $group: { _id: null, bytes: { $sum: '$stored_bytes' } } },
    ])
    .toArray();
  return sum?.bytes ?? 0;
}

/** What a version holds, as the workflow quota counts it (D26): its graph and contract as JSON text. */
export function versionBytes(graph: unknown, contract: unknown): number {
  return Buffer.byteLength(JSON.stringify(graph)) + Buffer.byteLength(JSON.stringify(contract));
}

/** A workflow whose `stored_bytes` a recount changed: what it said (null: never counted) and what it says now. */
export interface Recounted {
  workflowId: string;
  slug: string;
  before: number | null;
  after: number;
}

/**
 * Sets the `stored_bytes` of each of the account's workflows to what its versions hold: counts a
 * workflow published before the quota existed (none), and one whose publish was cut short after
 * its version was stored, before it was counted (too few). One scan of the account's versions and one of its
 * workflows; a publish between the two may be missed and is counted by the next recount.
 */
export async function recountStoredBytes(
  c: WorkflowCollections,
  accountId: string,
): Promise<Recounted[]> {
  const held = new Map<string, number>();
  const versions = c.workflowVersions.find(
    { account_id: accountId },
    { projection: { workflow_id: 1, graph: 1, contract: 1 } },
  );
  for await (const v of versions)
    held.set(v.workflow_id, (held.get(v.workflow_id) ?? 0) + versionBytes(v.graph, v.contract));
  const changed: Recounted[] = [];
  const workflows = await c.workflows
    .find({ account_id: accountId }, { projection: { slug: 1, stored_bytes: 1 } })
    .toArray(); // read whole before any is updated: small documents
  for (const wf of workflows) {
    const after = held.get(wf._id) ?? 0;
    if (wf.stored_bytes === after) continue;
    await c.workflows.updateOne({ _id: wf._id }, { $set: { stored_bytes: after } });
    changed.push({ workflowId: wf._id, slug: wf.slug, before: wf.stored_bytes ?? null, after });
  }
  return changed;
}

/**
 * How far a record's `updated_at` may run past its `latest.published_at` with `latest` still its
 * newest version: the clocks of the processes that publish. Past it, a publish did not set
 * `latest` (it crashed between, or an earlier release made it) and the versions say.
 */
const LATEST_SKEW_MS = 10_000;

/** The record's `latest`, when the publish that last touched the record set it. */
function freshLatest(doc: Pick<WorkflowDoc, 'latest' | 'updated_at'>): VersionPointer | undefined {
  const { latest } = doc;
  if (!latest || doc.updated_at.getTime() - latest.published_at.getTime() > LATEST_SKEW_MS)
    return undefined;
  return { id: latest.id, version: latest.version };
}

interface VersionPointer {
  id: string;
  version: number;
}

/** The newest version by a scan of every version (FerretDB decodes each): only where `latest` is not known. */
async function scanLatest(
  c: WorkflowCollections,
  workflowId: string,
): Promise<VersionPointer | null> {
  const doc = await c.workflowVersions.findOne(
    { workflow_id: workflowId },
    { sort: { version: -1 }, projection: { _id: 1, version: 1 } },
  );
  return doc && { id: doc._id, version: doc.version };
}

/** Sets the record's `latest` unless it names a newer version already (or the same, set since). */
async function setLatest(
  c: WorkflowCollections,
  workflowId: string,
  pointer: VersionPointer,
  publishedAt: Date,
): Promise<void> {
  await c.workflows.updateOne(
    {
      _id: workflowId,
      $or: [
        { latest: { $exists: false } },
        { 'latest.version': { $lt: pointer.version } },
        { 'latest.version': pointer.version, 'latest.published_at': { $lt: publishedAt } },
      ],
    },
    { $set: { latest: { ...pointer, published_at: publishedAt } } },
  );
}

/** `workflow_version_numbers`'s `_id` of a workflow's version `number`. */
function numberId(workflowId: string, number: number): string {
  return `${workflowId}#${number}`;
}

/** Writes version `number`'s entry; one written already (by its publish, or a reader) is the same. */
async function writeNumber(
  c: WorkflowCollections,
  workflowId: string,
  number: number,
  versionId: string,
): Promise<void> {
  const entry = {
    _id: numberId(workflowId, number),
    workflow_id: workflowId,
    version_id: versionId,
  };
  await c.workflowVersionNumbers.insertOne(entry).catch((err: unknown) => {
    if (!isDuplicateKey(err)) throw err;
  });
}

/** D2: a `wf_` id (own or public) or the caller's slug. */
export async function findWorkflow(
  c: WorkflowCollections,
  accountId: string,
  ref: string,
): Promise<WorkflowDoc | null> {
  const doc = await findWorkflowRecord(c, accountId, ref);
  return doc && (doc.account_id === accountId || doc.public) ? doc : null;
}

/**
 * The workflow a D2 reference names, whoever owns it (callers apply the access rule): by `wf_` id,
 * else the account's slug. One being deleted is none, but to a delete (`deleting`), which finishes it.
 */
export async function findWorkflowRecord(
  c: WorkflowCollections,
  accountId: string,
  ref: string,
  opts: { deleting?: boolean } = {},
): Promise<WorkflowDoc | null> {
  const doc = isId('wf', ref)
    ? await c.workflows.findOne({ _id: ref })
    : await c.workflows.findOne({ account_id: accountId, slug: ref });
  return doc && (!doc.deleting || opts.deleting) ? doc : null;
}

/** D1: the pinned version (number or `wfv_` id) of a workflow, or the latest when none is pinned. */
export async function findVersion(
  c: WorkflowCollections,
  workflowId: string,
  pin?: number | string,
): Promise<WorkflowVersionDoc | null> {
  if (pin === undefined) {
    const latest = await latestVersionPointer(c, workflowId);
    return latest && findVersionById(c, latest.id);
  }
  const version =
    typeof pin === 'number'
      ? await versionByNumber(c, workflowId, pin)
      : await findVersionById(c, pin);
  return version && version.workflow_id === workflowId ? version : null;
}

/**
 * Version `number` of a workflow, by `_id` through its number's entry. A version published before
 * entries were written is found once by its number, and its entry written; a number past the
 * newest is no version, without a look.
 */
async function versionByNumber(
  c: WorkflowCollections,
  workflowId: string,
  number: number,
): Promise<WorkflowVersionDoc | null> {
  const entry = await c.workflowVersionNumbers.findOne({ _id: numberId(workflowId, number) });
  if (entry) return findVersionById(c, entry.version_id);
  const latest = await latestVersionPointer(c, workflowId);
  if (!latest || number > latest.version) return null;
  const version = await c.workflowVersions.findOne({ workflow_id: workflowId, version: number });
  if (version) await writeNumber(c, workflowId, number, version._id);
  return version;
}

/** A version by its id alone (the caller checks its workflow; an `{_id}` filter is the one FerretDB does not scan for). */
export function findVersionById(
  c: WorkflowCollections,
  versionId: string,
): Promise<WorkflowVersionDoc | null> {
  return c.workflowVersions.findOne({ _id: versionId });
}

/**
 * D19: the default of input `key` in the version a run runs, and that version's owner (whose file a
 * default may be, for any account's run); undefined when the run, the version or the default is
 * gone. Two reads by `_id`.
 */
export async function runInputDefault(
  c: Pick<Collections, 'runs' | 'workflowVersions'>,
  runId: string,
  key: string,
): Promise<{ value: unknown; owner: string } | undefined> {
  const run = await c.runs.findOne(
    { _id: runId },
    { projection: { published_workflow_version_id: 1 } },
  );
  if (!run) return undefined;
  const version = await c.workflowVersions.findOne(
    { _id: run.published_workflow_version_id },
    { projection: { account_id: 1, contract: 1 } },
  );
  const input = version?.contract.inputs.find((i) => i.key === key);
  return input?.default === undefined
    ? undefined
    : { value: input.default, owner: version!.account_id };
}

/** D31: the output keys of a workflow version (one read by `_id`); null when the version is gone (D39). */
export async function versionOutputKeys(
  c: Pick<Collections, 'workflowVersions'>,
  versionId: string,
): Promise<string[] | null> {
  const version = await c.workflowVersions.findOne(
    { _id: versionId },
    { projection: { contract: 1 } },
  );
  return version ? version.contract.outputs.map((output) => output.key) : null;
}

/**
 * The id and number of a workflow's newest version, without its graph; null when it has none. Read
 * with the record by `_id` (`latest`); a record whose `latest` a publish left unset is set again
 * from the versions, once.
 */
export async function latestVersionPointer(
  c: WorkflowCollections,
  workflowId: string,
): Promise<VersionPointer | null> {
  const record = await c.workflows.findOne(
    { _id: workflowId },
    { projection: { latest: 1, updated_at: 1 } },
  );
  if (!record) return null;
  const fresh = freshLatest(record);
  if (fresh) return fresh;
  const pointer = await scanLatest(c, workflowId);
  if (pointer) await setLatest(c, workflowId, pointer, record.updated_at);
  return pointer;
}

/**
 * D30: one page of an account's workflows, newest first (ids sort by creation time, D5), with
 * the newest version of each, without its graph. `limit + 1` are read so the caller can tell
 * whether more follow. Two queries whatever the page size (FerretDB scans a whole collection per
 * query): the page, then every version of those workflows, of which the highest number is kept.
 * A record with no version to show (a first publish cut short before its version was stored) or
 * being deleted is left out, and the page read on past it, so every id the page gives is a
 * workflow it shows.
 */
export async function workflowPage(
  c: WorkflowCollections,
  accountId: string,
  page: { limit: number; startingAfter?: string },
): Promise<{ docs: WorkflowDoc[]; latest: Map<string, WorkflowVersionDoc> }> {
  const docs: WorkflowDoc[] = [];
  const latest = new Map<string, WorkflowVersionDoc>();
  let after = page.startingAfter;
  for (;;) {
    const want = page.limit + 1 - docs.length;
    const filter: Filter<WorkflowDoc> = { account_id: accountId };
    if (after) filter._id = { $lt: after };
    const read = await c.workflows.find(filter).sort({ _id: -1 }).limit(want).toArray();
    if (read.length > 0) {
      const versions = await c.workflowVersions
        .find({ workflow_id: { $in: read.map((w) => w._id) } }, { projection: { graph: 0 } })
        .toArray();
      for (const v of versions)
        if ((latest.get(v.workflow_id)?.version ?? 0) < v.version) latest.set(v.workflow_id, v);
    }
    docs.push(...read.filter((w) => latest.has(w._id) && !w.deleting));
    // Rare: only records a crash left without a version, or half deleted, make a page read on.
    if (read.length < want || docs.length > page.limit) return { docs, latest };
    after = read.at(-1)!._id;
  }
}

/**
 * D26: deletes a workflow and every version of it. The record is marked `deleting` first, so
 * no read sees it half gone (a crash after its versions went left it hidden but numbering the
 * slug's next publish 2, and counted), and every read but a delete takes it as gone; a repeated
 * delete, or the next publish of the slug, finishes it. The versions go next, the record last
 * (still counted by the quota until then), never versions nobody can reach; they are swept once
 * more after the record, for a publish that raced the delete. True when this call removed the
 * workflow (false: another delete did).
 */
export async function deleteWorkflowVersions(
  c: WorkflowCollections,
  workflowId: string,
): Promise<boolean> {
  await c.workflows.updateOne(
    { _id: workflowId, deleting: { $exists: false } },
    { $set: { deleting: true } },
  );
  // In slices (deleteAll): one FerretDB delete of more than 32,766 versions fails.
  await deleteAll(c.workflowVersions, { workflow_id: workflowId });
  const { deletedCount } = await c.workflows.deleteOne({ _id: workflowId });
  await deleteAll(c.workflowVersions, { workflow_id: workflowId });
  await deleteAll(c.workflowVersionNumbers, { workflow_id: workflowId });
  return deletedCount === 1;
}

/** A workflow's slug by id, or null (a version whose workflow is gone still runs under its id). */
export async function workflowSlug(
  c: Pick<Collections, 'workflows'>,
  workflowId: string,
): Promise<string | null> {
  const doc = await c.workflows.findOne({ _id: workflowId }, { projection: { slug: 1 } });
  return doc?.slug ?? null;
}
