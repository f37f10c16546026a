/**
 * Stored history for the "cost must not grow with stored data" benchmarks (P5, P7): copies of a
 * finished run record inserted in batches (FerretDB inserts slowly; the time is reported), and
 * optionally the account's ledger debits for them, stamped old, so the credit gate meets a long
 * ledger too. Debits of 0 USD: the balance, and the consistency check, are unaffected.
 */
import type { Store } from '../../../store/db';
import type { StoredRunDoc } from '../../../store/documents';
import { nowMs } from './stats';

const BATCH = 500;

export interface Filler {
  runs: number;
  /** Wall time of the inserts. */
  insertMs: number;
  remove(): Promise<void>;
}

/** Inserts `count` copies of `template` (ids `run_fill_<tag>_<i>`, owned by `accountId`), and with `ledger` a debit each. */
export async function addFiller(
  store: Store,
  template: StoredRunDoc,
  opts: { count: number; tag: string; accountId: string; ledger?: boolean },
): Promise<Filler> {
  const { runs, ledger } = store.collections;
  const old = new Date(Date.now() - 24 * 3600_000);
  const t0 = nowMs();
  for (let i = 0; i < opts.count; i += BATCH) {
    const n = Math.min(BATCH, opts.count - i);
    const ids = Array.from(
      { length: n },
      (_, k) => `run_fill_${opts.tag}_${String(i + k).padStart(6, '0')}`,
    );
    await runs.insertMany(
      ids.map((id) => ({
        ...template,
        _id: id,
        account_id: opts.accountId,
        created_at: old,
        completed_at: old,
      })),
    );
    if (opts.ledger) {
      await ledger.insertMany(
        ids.map((id) => ({
          _id: `led_${id.slice(4)}`,
          account_id: opts.accountId,
          kind: 'run' as const,
          run_id: id,
          amount_usd: 0,
          note: 'bench filler',
          created_at: old,
        })),
      );
    }
  }
  const insertMs = nowMs() - t0;
  const prefix = new RegExp(`^run_fill_${opts.tag}_`);
  return {
    runs: opts.count,
    insertMs,
    remove: async () => {
      await runs.deleteMany({ _id: prefix });
      if (opts.ledger) await ledger.deleteMany({ _id: new RegExp(`^led_fill_${opts.tag}_`) });
    },
  };
}
