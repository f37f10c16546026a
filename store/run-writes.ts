/**
 * The per-process group commit (store/group-commit.ts) of the writes every run makes: its record
 * at start (the API; and an idempotent start's claim of its key, D18), its debit and its final
 * record at its end (the worker's finalize). Under
 * load each is one command per batch of runs instead of one per run, so the store's single
 * writer (FerretDB on SQLite) stops being the ceiling of starts and ends.
 *
 * Each write resolves only once the command carrying it was acknowledged, with its own outcome:
 * a start is answered only after its record is stored, and a duplicate `_id` (an idempotent
 * start's run id recorded by another request, D18; a debit booked already, D17) fails that run
 * alone, exactly as the single write would. The checks that decide anything (the D17 credit
 * gate, the D18 claim, "the end whose debit is booked first is the run's one end") are unique
 * `_id` inserts, and stay so: batching changes when a write is sent, never what decides it.
 */
import type { RunFinal } from '../domain/run';
import type { Collections } from './db';
import type { IdempotencyKeyDoc, RunDoc } from './documents';
import { DEFAULT_MAX_BATCH, GroupCommit } from './group-commit';
import { insertClaims } from './idempotency';
import { insertEntries, isDuplicateKey, type NewEntry } from './ledger';
import { finalizeRunRecords, insertRuns } from './runs';

export class RunWrites {
  private readonly runInserts: GroupCommit<RunDoc, void>;
  private readonly entryInserts: GroupCommit<NewEntry, void>;
  private readonly runEnds: GroupCommit<RunFinal, void>;
  private readonly claimInserts: GroupCommit<IdempotencyKeyDoc, void>;

  constructor(
    c: Pick<Collections, 'runs' | 'ledger' | 'idempotencyKeys'>,
    maxBatch = DEFAULT_MAX_BATCH,
  ) {
    this.runInserts = new GroupCommit((runs) => insertRuns(c, runs), maxBatch);
    this.entryInserts = new GroupCommit((entries) => insertEntries(c, entries), maxBatch);
    this.runEnds = new GroupCommit((finals) => finalizeRunRecords(c, finals), maxBatch);
    this.claimInserts = new GroupCommit((claims) => insertClaims(c, claims), maxBatch);
  }

  /** The insert of claimIdempotencyKey (store/idempotency.ts), group-committed: rejects with code 11000 when the key is claimed. */
  insertClaim(claim: IdempotencyKeyDoc): Promise<void> {
    return this.claimInserts.submit(claim);
  }

  /** insertRun (store/runs.ts), group-committed: rejects with code 11000 when the run id is taken. */
  insertRun(run: RunDoc): Promise<void> {
    return this.runInserts.submit(run);
  }

  /** postEntry (store/ledger.ts), group-committed: true if this call booked the entry, false if it was booked already. */
  async postEntry(entry: NewEntry): Promise<boolean> {
    try {
      await this.entryInserts.submit(entry);
      return true;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      return false;
    }
  }

  /** finalizeRunRecord (store/runs.ts), group-committed; does not tell whether the record was already so. */
  finalizeRunRecord(final: RunFinal): Promise<void> {
    return this.runEnds.submit(final);
  }

  /** Commands sent and writes carried so far, per kind (how well writes group: bench P1). */
  get stats() {
    return {
      runInserts: this.runInserts.stats,
      entryInserts: this.entryInserts.stats,
      runEnds: this.runEnds.stats,
      claimInserts: this.claimInserts.stats,
    };
  }
}
