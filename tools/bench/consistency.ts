/**
 * After the load: does what the service stored still add up? Every run whose workflow has
 * closed must have a finalized record, and every finalized run with a cost must have exactly
 * its debit in the ledger (store/ledger.ts: the balance is the sum of the entries). Load is
 * when lost updates show. The benchmarks delete finished run records between phases
 * (BenchContext.resetRuns), which checks their debits first and keeps the tally.
 */
import type { Store } from '../../store/db';
import type { RunDoc } from '../../store/documents';
import type { BenchContext, DebitTally } from './context';

/** Compares finalized runs' total_cost with their ledger debits (looked up by run id). */
export async function debitCheck(
  store: Store,
  runs: Array<Pick<RunDoc, '_id' | 'total_cost'>>,
): Promise<DebitTally> {
  const tally: DebitTally = { runs: runs.length, missing: 0, wrong: 0 };
  if (runs.length === 0) return tally;
  const entries = await store.collections.ledger
    .find(
      { kind: 'run', run_id: { $in: runs.map((r) => r._id) } },
      { projection: { amount_usd: 1, run_id: 1 } },
    )
    .toArray();
  const debitOf = new Map<string, number>();
  for (const e of entries)
    if (e.run_id) debitOf.set(e.run_id, (debitOf.get(e.run_id) ?? 0) - e.amount_usd);
  for (const run of runs) {
    const cost = run.total_cost ?? 0;
    const debit = debitOf.get(run._id);
    if (cost > 0 && debit === undefined) tally.missing++;
    else if (debit !== undefined && Math.abs(debit - cost) > 1e-9) tally.wrong++;
  }
  return tally;
}

export function tallyDebits(into: DebitTally, add: DebitTally): void {
  into.runs += add.runs;
  into.missing += add.missing;
  into.wrong += add.wrong;
}

export async function checkConsistency(ctx: BenchContext): Promise<string[]> {
  const { collections } = ctx.store;
  const lines: string[] = [];
  const total = await collections.runs.countDocuments({ account_id: ctx.accountId });
  const open = await collections.runs
    .find(
      { account_id: ctx.accountId, finalized: { $ne: true } },
      { projection: { _id: 1, status: 1 } },
    )
    .toArray();
  const closedNotFinalized = new Map<string, string[]>();
  let running = 0;
  let unknown = 0;
  for (const doc of open.slice(0, 500)) {
    const d = await ctx.temporal.workflow
      .getHandle(doc._id)
      .describe()
      .catch(() => undefined);
    if (!d) {
      unknown++;
      continue;
    }
    if (d.status.name === 'RUNNING') {
      running++;
      continue;
    }
    const key = `workflow ${d.status.name}, record \`${doc.status}\``;
    closedNotFinalized.set(key, [...(closedNotFinalized.get(key) ?? []), doc._id]);
  }
  const lost = [...closedNotFinalized.values()].reduce((n, ids) => n + ids.length, 0);
  lines.push(
    `- Run records still stored: ${total}; not finalized: ${open.length}${open.length > 500 ? ' (first 500 checked)' : ''} — ${running} still running in Temporal, ${unknown} unknown to Temporal, **${lost} closed in Temporal yet not finalized in MongoDB**.`,
  );
  for (const [key, ids] of closedNotFinalized)
    lines.push(`  - ${ids.length} × ${key} (e.g. \`${ids[0]}\`)`);

  const entries = await collections.ledger
    .find({ account_id: ctx.accountId }, { projection: { amount_usd: 1, kind: 1 } })
    .toArray();
  const balance = entries.reduce((s, e) => s + e.amount_usd, 0);
  const debits = entries.filter((e) => e.kind === 'run').length;
  const finalized = await collections.runs
    .find({ account_id: ctx.accountId, finalized: true }, { projection: { total_cost: 1 } })
    .toArray();
  const t = { ...ctx.debitTally };
  tallyDebits(t, await debitCheck(ctx.store, finalized));
  lines.push(
    `- Ledger: ${entries.length} entries, balance (their sum) ${balance.toFixed(6)} USD, ${debits} run debits. Of the ${t.runs} finalized runs checked (as the benchmarks cleared them, and at the end): ` +
      `${t.missing} without their debit, ${t.wrong} with a debit different from their total_cost (${t.missing + t.wrong === 0 ? 'consistent' : '**inconsistent**'}).`,
  );
  return lines;
}
