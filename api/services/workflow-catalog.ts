/**
 * Published workflows and versions as a start sees them (D1, D2), without a store round trip per
 * start. What may be remembered, and for how long, follows from what can change:
 *  - a version is immutable (D26): kept until evicted (LRU, MAX_VERSIONS);
 *  - a workflow record (slug, id, `public`) and the slug's latest-version pointer can change on
 *    publish: kept at most POINTER_TTL_MS. The process that publishes updates both at once, so
 *    D1 ("absent: the latest version") holds immediately there and within 2 s in any other;
 *  - "not found" is never remembered, so a first publish is visible everywhere at once.
 */
import type { Collections } from '../../store/db';
import type { WorkflowDoc, WorkflowVersionDoc } from '../../store/documents';
import { isId } from '../../domain/ids';
import {
  findVersion,
  findVersionById,
  findWorkflowRecord,
  latestVersionPointer,
} from '../../store/workflows';
import { TtlCache } from '../../lib/cache/ttl-cache';

/** How stale another process's publish may look here (D1). */
export const POINTER_TTL_MS = 2_000;
/** Versions held (each carries its graph). */
const MAX_VERSIONS = 500;
const MAX_WORKFLOWS = 10_000;

type WorkflowCollections = Pick<Collections, 'workflows' | 'workflowVersions'>;

interface Pointer {
  id: string;
  version: number;
}

/** Per-process view of the published workflows (built once per API in createApp). */
export class WorkflowCatalog {
  private readonly workflows: TtlCache<WorkflowDoc | null>;
  private readonly pointers: TtlCache<Pointer | null>;
  private readonly versions = new TtlCache<WorkflowVersionDoc | null>({
    ttlMs: Number.POSITIVE_INFINITY,
    maxEntries: MAX_VERSIONS,
  });
  /** The newest version this process published per workflow: a pointer read that raced the publish never moves back past it. */
  private readonly publishedHere = new Map<string, Pointer>();

  constructor(
    private readonly collections: WorkflowCollections,
    ttlMs = POINTER_TTL_MS,
  ) {
    const ttl = Math.min(ttlMs, POINTER_TTL_MS);
    this.workflows = new TtlCache({ ttlMs: ttl, maxEntries: MAX_WORKFLOWS });
    this.pointers = new TtlCache({ ttlMs: ttl, maxEntries: MAX_WORKFLOWS });
  }

  /** D2: a `wf_` id (own or public) or the caller's slug; null when there is none. */
  async findWorkflow(accountId: string, ref: string): Promise<WorkflowDoc | null> {
    const key = isId('wf', ref) ? `id\0${ref}` : `slug\0${accountId}\0${ref}`;
    // The record is cached whoever read it; the access rule is applied to every caller here.
    const doc = await this.workflows.get(
      key,
      () => findWorkflowRecord(this.collections, accountId, ref),
      (d) => d !== null,
    );
    if (!doc) return null;
    return doc.account_id === accountId || doc.public ? doc : null;
  }

  /** D1: the pinned version (number or `wfv_` id), or the latest when none is pinned. */
  async findVersion(workflowId: string, pin?: number | string): Promise<WorkflowVersionDoc | null> {
    if (pin === undefined) {
      const pointer = await this.pointers.get(
        workflowId,
        () => this.loadPointer(workflowId),
        (p) => p !== null,
      );
      return pointer ? this.versionById(workflowId, pointer.id) : null;
    }
    if (typeof pin === 'string') return this.versionById(workflowId, pin);
    return this.versions.get(
      `${workflowId}#${pin}`,
      () => findVersion(this.collections, workflowId, pin),
      (v) => v !== null,
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

  private async loadPointer(workflowId: string): Promise<Pointer | null> {
    const stored = await latestVersionPointer(this.collections, workflowId);
    const mine = this.publishedHere.get(workflowId);
    return mine && (!stored || mine.version > stored.version) ? mine : stored;
  }

  private async versionById(workflowId: string, id: string): Promise<WorkflowVersionDoc | null> {
    const doc = await this.versions.get(
      id,
      () => findVersionById(this.collections, id),
      (v) => v !== null,
    );
    return doc && doc.workflow_id === workflowId ? doc : null;
  }
}
