/**
 * Published workflows and versions as a start sees them (D1, D2), without a store round trip per
 * start. What may be remembered, and for how long, follows from what can change:
 *  - a version is immutable (D26): kept until evicted (LRU, MAX_VERSIONS);
 *  - a workflow record (slug, id, `public`) and the slug's latest-version pointer can change on
 *    publish: kept at most POINTER_TTL_MS. The process that publishes updates both at once, so
 *    D1 ("absent: the latest version") holds immediately there and within 2 s in any other;
 *  - "not found" is never remembered, so a first publish is visible everywhere at once; a delete
 *    is seen at once in its process and within POINTER_TTL_MS in any other.
 * lru-cache holds the entries (TTL, a bound on their number, least recently used out first) and
 * runs one load per key at a time, so a burst of starts of a cold workflow costs one round trip.
 */
import { LRUCache } from 'lru-cache';
import type { Collections } from '../../store/db';
import type { WorkflowDoc, WorkflowVersionDoc } from '../../store/documents';
import { isId } from '../../domain/ids';
import {
  findVersion,
  findVersionById,
  findWorkflowRecord,
  latestVersionPointer,
} from '../../store/workflows';

/** How stale another process's publish may look here (D1). */
export const POINTER_TTL_MS = 2_000;
/** Versions held (each carries its graph). */
const MAX_VERSIONS = 500;
const MAX_WORKFLOWS = 10_000;

type WorkflowCollections = Pick<
  Collections,
  'workflows' | 'workflowVersions' | 'workflowVersionNumbers'
>;

interface Pointer {
  id: string;
  version: number;
}

/** A cache's load: each read passes its own (as lru-cache's fetch `context`); null is "not found". */
type Load<V> = () => Promise<V | null>;
/** What a load that found nothing answers once `published()` replaced its entry mid-flight. */
const OVERTAKEN = Symbol('overtaken');
type Cache<V extends object> = LRUCache<string, V | typeof OVERTAKEN, Load<V>>;

function loadingCache<V extends object>(opts: { max: number; ttl?: number }): Cache<V> {
  return new LRUCache<string, V | typeof OVERTAKEN, Load<V>>({
    ...opts,
    // published() may set an entry while a load of it is in flight; lru-cache then aborts the
    // load. With ignoreFetchAbort its waiters still get what it read (which is not stored); a load
    // that found nothing answers OVERTAKEN, as undefined would make the waiters' fetch reject.
    ignoreFetchAbort: true,
    // undefined ("not found") is answered to every waiter but never stored.
    fetchMethod: async (_key, _stale, { context: load, signal }) =>
      (await load()) ?? (signal.aborted ? OVERTAKEN : undefined),
  });
}

/** The cached value of `key`, else `load()`'s (one load per key at a time); null when not found. */
async function read<V extends object>(
  cache: Cache<V>,
  key: string,
  load: Load<V>,
): Promise<V | null> {
  const value = await cache.fetch(key, { context: load });
  return value === undefined || value === OVERTAKEN ? null : value;
}

/** Per-process view of the published workflows (built once per API in createApp). */
export class WorkflowCatalog {
  private readonly workflows = loadingCache<WorkflowDoc>({
    ttl: POINTER_TTL_MS,
    max: MAX_WORKFLOWS,
  });
  private readonly pointers = loadingCache<Pointer>({ ttl: POINTER_TTL_MS, max: MAX_WORKFLOWS });
  /** Versions are immutable (D26): no TTL, only the bound. */
  private readonly versions = loadingCache<WorkflowVersionDoc>({ max: MAX_VERSIONS });
  /** The newest version this process published per workflow: a pointer read that raced the publish never moves back past it. */
  private readonly publishedHere = new Map<string, Pointer>();

  constructor(private readonly collections: WorkflowCollections) {}

  /** D2: a `wf_` id (own or public) or the caller's slug; null when there is none. */
  async findWorkflow(accountId: string, ref: string): Promise<WorkflowDoc | null> {
    const key = isId('wf', ref) ? `id\0${ref}` : `slug\0${accountId}\0${ref}`;
    // The record is cached whoever read it; the access rule is applied to every caller here.
    const doc = await read(this.workflows, key, () =>
      findWorkflowRecord(this.collections, accountId, ref),
    );
    if (!doc) return null;
    return doc.account_id === accountId || doc.public ? doc : null;
  }

  /** D1: the pinned version (number or `wfv_` id), or the latest when none is pinned. */
  async findVersion(workflowId: string, pin?: number | string): Promise<WorkflowVersionDoc | null> {
    if (pin === undefined) {
      const pointer = await read(this.pointers, workflowId, () => this.loadPointer(workflowId));
      return pointer ? this.versionById(workflowId, pointer.id) : null;
    }
    if (typeof pin === 'string') return this.versionById(workflowId, pin);
    return read(this.versions, `${workflowId}#${pin}`, () =>
      findVersion(this.collections, workflowId, pin),
    );
  }

  /** Called by this process's publish: later starts here see the new version at once (D1). */
  published(workflow: WorkflowDoc, version: WorkflowVersionDoc): void {
    this.workflows.set(`id\0${workflow._id}`, workflow);
    this.workflows.set(`slug\0${workflow.account_id}\0${workflow.slug}`, workflow);
    // The version itself is read back once, on first use: what runs is what the store holds.
    const pointer = { id: version._id, version: version.version };
    const known = this.publishedHere.get(workflow._id);
    if (!known || known.version < pointer.version) {
      if (this.publishedHere.size >= MAX_WORKFLOWS) this.publishedHere.clear(); // bounded; forgetting only loses the race guard
      this.publishedHere.set(workflow._id, pointer);
      this.pointers.set(workflow._id, pointer);
    }
  }

  /**
   * Called by this process's delete: later starts here find no such workflow at once. Its versions
   * stay cached until evicted, unreachable (every start resolves the workflow first, D2).
   */
  deleted(workflow: WorkflowDoc): void {
    this.workflows.delete(`id\0${workflow._id}`);
    this.workflows.delete(`slug\0${workflow.account_id}\0${workflow.slug}`);
    this.pointers.delete(workflow._id);
    this.publishedHere.delete(workflow._id);
  }

  private async loadPointer(workflowId: string): Promise<Pointer | null> {
    const stored = await latestVersionPointer(this.collections, workflowId);
    const mine = this.publishedHere.get(workflowId);
    return mine && (!stored || mine.version > stored.version) ? mine : stored;
  }

  private async versionById(workflowId: string, id: string): Promise<WorkflowVersionDoc | null> {
    const doc = await read(this.versions, id, () => findVersionById(this.collections, id));
    return doc && doc.workflow_id === workflowId ? doc : null;
  }
}
