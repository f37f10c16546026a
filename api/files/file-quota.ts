/**
 * D19: the storage quota of uploads. The bytes an account's uploaded files hold at once are
 * bounded (FILE_STORAGE_MAX_BYTES, or the account's own quota an operator set with `wrs accounts
 * file-storage`), so one tenant cannot fill the storage every tenant shares; deleting files
 * (DELETE /api/v1/files/{fileId}) or their expiry (D29) makes room again.
 *
 * What an account holds is a store aggregate (an index range on MongoDB, a scan of every file on
 * FerretDB), so each process remembers it (with the account's quota) and adds its own uploads and
 * deletes: it asks the store again after STALE_MS, and after NEAR_MS once what is left is within
 * two uploads of the limit, where another process's uploads could decide. So an account near its
 * quota costs the store at most one sum a second per API process, however fast it uploads.
 * Uploads in flight in this process hold the length they declared. Other processes' uploads of
 * the last second (30 s far from the quota), and uploads without a declared length, can take an
 * account past its quota by at most what they carry: the quota bounds the storage, it is not a
 * ledger (D17's credits are).
 */
import type { Db } from 'mongodb';
import { accountCap } from '../../store/accounts';
import type { Collections } from '../../store/db';
import { uploadedBytes } from '../../store/files';

/** How long a process trusts the sum it read while the account is far from its quota. */
export const STALE_MS = 30_000;
/** The same within two uploads of the quota. */
export const NEAR_MS = 1_000;
/** Accounts remembered per process (a few dozen bytes each). */
const MAX_ACCOUNTS = 10_000;

export interface QuotaRoom {
  /** Bytes the next upload may have. */
  room: number;
  /** Bytes the account's uploads hold, with those in flight here. */
  used: number;
  /** The account's quota. */
  quota: number;
}

interface Known {
  bytes: number;
  quota: number;
  at: number;
}

export class FileQuota {
  private readonly known = new Map<string, Known>();
  private readonly inFlight = new Map<string, number>();

  constructor(
    private readonly store: { db: Db; collections: Pick<Collections, 'accounts'> },
    private readonly limits: { storageMaxBytes: number; maxBytes: number },
    private readonly timing = { staleMs: STALE_MS, nearMs: NEAR_MS },
  ) {}

  /** What the account's next upload may hold. */
  async room(accountId: string): Promise<QuotaRoom> {
    const pending = this.inFlight.get(accountId) ?? 0;
    let known = this.known.get(accountId);
    if (!known || Date.now() - known.at >= this.trustMs(known.quota - known.bytes - pending)) {
      const [bytes, own] = await Promise.all([
        uploadedBytes(this.store.db, accountId),
        accountCap(this.store.collections, accountId, 'max_file_storage_bytes'),
      ]);
      known = { bytes, quota: own ?? this.limits.storageMaxBytes, at: Date.now() };
      this.remember(accountId, known);
    }
    const used = known.bytes + pending;
    return { room: Math.max(0, known.quota - used), used, quota: known.quota };
  }

  /** Holds `bytes` for an upload in flight (its declared length); the answer gives them back. */
  hold(accountId: string, bytes: number): () => void {
    if (bytes <= 0) return () => undefined;
    this.inFlight.set(accountId, (this.inFlight.get(accountId) ?? 0) + bytes);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (this.inFlight.get(accountId) ?? 0) - bytes;
      if (left > 0) this.inFlight.set(accountId, left);
      else this.inFlight.delete(accountId);
    };
  }

  /** An upload stored (`bytes` > 0) or deleted (< 0): the remembered sum follows at once. */
  changed(accountId: string, bytes: number): void {
    const known = this.known.get(accountId);
    if (known) known.bytes = Math.max(0, known.bytes + bytes);
  }

  /** How long a sum is trusted: shorter within two uploads of the quota, where others' uploads could decide. */
  private trustMs(left: number): number {
    return left < 2 * this.limits.maxBytes ? this.timing.nearMs : this.timing.staleMs;
  }

  private remember(accountId: string, entry: Known): void {
    this.known.delete(accountId);
    this.known.set(accountId, entry);
    if (this.known.size > MAX_ACCOUNTS) this.known.delete(this.known.keys().next().value!);
  }
}
