/**
 * Storage quotas per account, so one tenant cannot fill the storage every tenant shares: what its
 * files hold, uploads and the files its runs made, with the items its big runs store (D19, D35,
 * FILE_STORAGE_MAX_BYTES, `wrs accounts file-storage`; the API refuses uploads past it, the worker
 * files and items of unpaid work) and what its
 * published workflow versions hold (D26, WORKFLOW_STORAGE_MAX_BYTES, `wrs accounts
 * workflow-storage`). Deleting uploads or runs (or their expiry, D29) makes room for files,
 * deleting a workflow (DELETE /api/v1/workflows/{workflowId}) room for versions.
 *
 * What an account holds is a store aggregate (an index range on MongoDB, a scan on FerretDB), so
 * each process remembers it (with the account's quota) and adds its own writes and deletes: it asks
 * the store again after STALE_MS, and after NEAR_MS once what is left is within two of the largest
 * writes of the limit, where another process's writes could decide. So an account near its quota
 * costs the store at most one sum a second per API process, however fast it writes. Writes in
 * flight in this process hold their length (the length an upload declared, else the most it may
 * grow to), so concurrent ones cannot pass the quota together, and so do a big run's items from
 * their check until their block records them in the store's sum (`take`, `pend`, `settle`), so a
 * read of the sum meanwhile cannot drop them. Other processes' writes of the last
 * second (30 s far from the quota) can take an account past its quota by at most what they carry:
 * a quota bounds the storage, it is not a ledger (D17's credits are).
 */
import type { Db } from 'mongodb';
import { accountCap, type AccountCap } from './accounts';
import type { Collections } from './db';
import { storedBytes } from './files';
import { storedItemBytes } from './item-usage';
import { publishedBytes } from './workflows';

/** How long a process trusts the sum it read while the account is far from its quota. */
export const STALE_MS = 30_000;
/** The same within two of the largest writes of the quota. */
export const NEAR_MS = 1_000;
/** Accounts remembered per process (a few dozen bytes each). */
const MAX_ACCOUNTS = 10_000;

export interface QuotaRoom {
  /** Bytes the next write may have. */
  room: number;
  /** Bytes the account holds, with uploads in flight here. */
  used: number;
  /** The account's quota. */
  quota: number;
}

/** A write's place in the quota (see `reserve`). */
export interface Reservation extends QuotaRoom {
  fits: boolean;
  release: () => void;
}

interface Known {
  bytes: number;
  quota: number;
  at: number;
}

/** How long a remembered sum is trusted, far from the quota and near it (tests shorten them). */
export interface QuotaTiming {
  staleMs: number;
  nearMs: number;
}

/** One kind of storage an account holds, and how it is bounded. */
export interface QuotaSpec {
  /** The bytes the account holds now (a store aggregate). */
  used(accountId: string): Promise<number>;
  /** The account's own quota, where an operator set one. */
  cap: AccountCap;
  /** The quota of every other account. */
  defaultBytes: number;
  /** The largest single write (an upload, a published graph): "near the quota" is within two of them. */
  largestWrite: number;
}

/** A sum being read from the store, and what this process wrote or deleted meanwhile. */
interface Refresh {
  done: Promise<Known>;
  delta: number;
  /** Forgotten while it read (a delete of unknown size): its sum is not remembered. */
  stale?: boolean;
}

export class StorageQuota {
  private readonly known = new Map<string, Known>();
  private readonly inFlight = new Map<string, number>();
  private readonly refreshing = new Map<string, Refresh>();

  constructor(
    private readonly accounts: Pick<Collections, 'accounts'>,
    private readonly spec: QuotaSpec,
    private readonly timing: QuotaTiming = { staleMs: STALE_MS, nearMs: NEAR_MS },
  ) {}

  /** What the account's next write may hold. */
  async room(accountId: string): Promise<QuotaRoom> {
    return this.roomOf(accountId, await this.current(accountId));
  }

  /**
   * The check and the hold of one write of `bytes` (its declared length; 0 when unknown): whether
   * it fits what is left, and, when it does, its bytes held until `release()` (the answer). A write
   * of unknown length holds the most it may grow to (the largest write, within the room), so
   * concurrent ones in this process cannot each take the whole room.
   */
  async reserve(accountId: string, bytes: number): Promise<Reservation> {
    const known = await this.current(accountId);
    // From here on nothing awaits: the check and the hold are one step, so writes that waited for
    // the same read of the sum see each other's holds (checked apart, sixteen versions passed a
    // quota of eleven at once).
    const room = this.roomOf(accountId, known);
    const fits = room.room > 0 && bytes <= room.room;
    const held = bytes > 0 ? bytes : Math.min(this.spec.largestWrite, room.room);
    return { ...room, fits, release: fits ? this.hold(accountId, held) : () => undefined };
  }

  /**
   * The check and the count of a write of `bytes` stored at once (a big run's item, D35): when it
   * fits what is left, held in the same step as the check until `settle` says the store's sum has
   * it. Checked apart, the rows of a block that waited for one read of the sum all saw the room
   * before any was counted (313,728 bytes kept within a quota of 262,144); counted only in the
   * remembered sum, a read of the store's sum before the block recorded them dropped them
   * (350,364).
   */
  async take(accountId: string, bytes: number): Promise<QuotaRoom & { fits: boolean }> {
    const room = this.roomOf(accountId, await this.current(accountId));
    const fits = bytes <= room.room;
    if (fits) this.pend(accountId, bytes);
    return { ...room, fits };
  }

  /** Holds `bytes` for a write in flight (an upload's declared length, a version being published) until its answer. */
  hold(accountId: string, bytes: number): () => void {
    this.pend(accountId, bytes);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.settle(accountId, bytes, false);
    };
  }

  /** Counts `bytes` stored without a check that the store's sum does not hold yet, until `settle`. */
  pend(accountId: string, bytes: number): void {
    if (bytes > 0) this.inFlight.set(accountId, this.held(accountId) + bytes);
  }

  /** Held bytes that the store's sum now holds (`stored`: they stay counted) or never will. */
  settle(accountId: string, bytes: number, stored: boolean): void {
    if (bytes <= 0) return;
    const left = this.held(accountId) - bytes;
    if (left > 0) this.inFlight.set(accountId, left);
    else this.inFlight.delete(accountId);
    if (stored) this.changed(accountId, bytes);
  }

  /** The remembered sum, read anew once it is older than it may be trusted. */
  private async current(accountId: string): Promise<Known> {
    const known = this.known.get(accountId);
    if (
      known &&
      Date.now() - known.at < this.trustMs(known.quota - known.bytes - this.held(accountId))
    )
      return known;
    return this.refresh(accountId);
  }

  /** What is left of the quota by `known`, with the writes in flight here (read now, after any await). */
  private roomOf(accountId: string, known: Known): QuotaRoom {
    const used = known.bytes + this.held(accountId);
    return { room: Math.max(0, known.quota - used), used, quota: known.quota };
  }

  private held(accountId: string): number {
    return this.inFlight.get(accountId) ?? 0;
  }

  /**
   * Drops the account's remembered sum: a delete of a size not known here (a run's files and
   * pages, D39) is counted by the next check's read of the store, at once instead of when the
   * sum would have been read anyway.
   */
  forget(accountId: string): void {
    this.known.delete(accountId);
    // A read under way may have summed before the delete: it answers its waiters, not the next check.
    const running = this.refreshing.get(accountId);
    if (running) running.stale = true;
    this.refreshing.delete(accountId);
  }

  /** A write stored (`bytes` > 0) or deleted (< 0): the remembered sum follows at once. */
  changed(accountId: string, bytes: number): void {
    const known = this.known.get(accountId);
    if (known) known.bytes = Math.max(0, known.bytes + bytes);
    // A delete the read may already miss is not taken off again: that could only undercount.
    const refresh = this.refreshing.get(accountId);
    if (refresh && bytes > 0) refresh.delta += bytes;
  }

  /**
   * The account's sum read anew, one read per account at a time. A write this process finished
   * while the sum was read may or may not be in it, so it is added again: a sum too high until the
   * next read (the safe side) rather than a write lost from the count.
   */
  private refresh(accountId: string): Promise<Known> {
    const running = this.refreshing.get(accountId);
    if (running) return running.done;
    const read = Promise.all([
      this.spec.used(accountId),
      accountCap(this.accounts, accountId, this.spec.cap),
    ]);
    const refresh: Refresh = {
      delta: 0,
      done: read
        .then(([bytes, own]) => {
          const known = {
            bytes: Math.max(0, bytes + refresh.delta),
            quota: own ?? this.spec.defaultBytes,
            at: Date.now(),
          };
          if (!refresh.stale) this.remember(accountId, known);
          return known;
        })
        .finally(() => {
          if (this.refreshing.get(accountId) === refresh) this.refreshing.delete(accountId);
        }),
    };
    this.refreshing.set(accountId, refresh);
    return refresh.done;
  }

  /** How long a sum is trusted: shorter within two of the largest writes of the quota, where others' writes could decide. */
  private trustMs(left: number): number {
    return left < 2 * this.spec.largestWrite ? this.timing.nearMs : this.timing.staleMs;
  }

  private remember(accountId: string, entry: Known): void {
    this.known.delete(accountId);
    this.known.set(accountId, entry);
    if (this.known.size > MAX_ACCOUNTS) this.known.delete(this.known.keys().next().value!);
  }
}

/** D19: what an account's files and the items of its big runs (store/item-usage.ts) may still hold. */
export function fileQuota(
  store: { db: Db; collections: Pick<Collections, 'accounts' | 'itemUsage'> },
  files: { storageMaxBytes: number; maxBytes: number },
  timing?: QuotaTiming,
): StorageQuota {
  return new StorageQuota(
    store.collections,
    {
      used: async (accountId) => {
        const [fileBytes, itemBytes] = await Promise.all([
          storedBytes(store.db, accountId),
          storedItemBytes(store.collections, accountId),
        ]);
        return fileBytes + itemBytes;
      },
      cap: 'max_file_storage_bytes',
      defaultBytes: files.storageMaxBytes,
      largestWrite: files.maxBytes,
    },
    timing,
  );
}

/** D26: what an account's published workflow versions may still hold. */
export function workflowQuota(
  collections: Pick<Collections, 'accounts' | 'workflows'>,
  api: { workflowStorageMaxBytes: number; maxJsonBodyBytes: number },
): StorageQuota {
  return new StorageQuota(collections, {
    used: (accountId) => publishedBytes(collections, accountId),
    cap: 'max_workflow_storage_bytes',
    defaultBytes: api.workflowStorageMaxBytes,
    largestWrite: api.maxJsonBodyBytes,
  });
}
