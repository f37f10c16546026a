/**
 * After the load: does what the service stored still add up? Every run whose workflow has
 * closed must have a finalized record, and the account's balance must equal the sum of its
 * ledger entries. Load is when lost updates show.
 */
import type { BenchContext } from './context';

export async function checkConsistency(ctx: BenchContext): Promise<string[]> {
  const { collections } = ctx.store;
  const lines: string[] = [];
  const total = await collections.runs.countDocuments({ account_id: ctx.accountId });
  const open = await collections.runs.find({ account_id: ctx.accountId, finalized: { $ne: true } }, { projection: { _id: 1, status: 1 } }).toArray();
  const closedNotFinalized = new Map<string, string[]>();
  let running = 0;
  let unknown = 0;
  for (const doc of open.slice(0, 500)) {
    const d = await ctx.temporal.workflow.getHandle(doc._id).describe().catch(() => undefined);
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
    `- Run records: ${total}; not finalized: ${open.length}${open.length > 500 ? ' (first 500 checked)' : ''} — ${running} still running in Temporal, ${unknown} unknown to Temporal, **${lost} closed in Temporal yet not finalized in MongoDB**.`,
  );
  for (const [key, ids] of closedNotFinalized) lines.push(`  - ${ids.length} × ${key} (e.g. \`${ids[0]}\`)`);

  // The balance is the sum of the ledger (store/ledger.ts): check the run debits against the runs.
  const entries = await collections.ledger.find({ account_id: ctx.accountId }, { projection: { amount_usd: 1, kind: 1, run_id: 1 } }).toArray();
  const sum = entries.reduce((s, e) => s + e.amount_usd, 0);
  const debited = entries.filter((e) => e.kind === 'run');
  const costs = await collections.runs.find({ account_id: ctx.accountId, finalized: true }, { projection: { total_cost: 1 } }).toArray();
  const costSum = costs.reduce((s, r) => s + (r.total_cost ?? 0), 0);
  const debitSum = -debited.reduce((s, e) => s + e.amount_usd, 0);
  const drift = debitSum - costSum;
  lines.push(
    `- Ledger: ${entries.length} entries, balance ${sum.toFixed(6)} USD; ${debited.length} run debits for ${costs.length} finalized runs; ` +
      `debits ${debitSum.toFixed(6)} vs total_cost ${costSum.toFixed(6)} USD (${Math.abs(drift) < 1e-6 ? 'consistent' : `**inconsistent by ${drift.toFixed(6)}**`}).`,
  );
  return lines;
}
