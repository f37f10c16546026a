/** The credit commands (D17): `credits add` changes a balance, `ledger` shows the balance and its entries. */
import type { LedgerDoc } from '../../store/documents';
import { addCredits } from '../../store/accounts';
import { accountBalance, listEntries } from '../../store/ledger';
import {
  EXIT_OK,
  parsePositiveInt,
  parseUsdAmount,
  printJson,
  requireAccount,
  type Command,
  type CommandContext,
} from '../command';
import { formatDate, formatUsd, table } from '../format';

export const creditCommands: Command[] = [
  { words: ['credits', 'add'], args: ['ACCOUNT_ID', 'USD'], options: ['note'], run: creditsAdd },
  { words: ['ledger'], args: ['ACCOUNT_ID'], options: ['limit'], run: ledger },
];

function entryJson(e: LedgerDoc) {
  return {
    id: e._id,
    kind: e.kind,
    amount_usd: e.amount_usd,
    run_id: e.run_id,
    note: e.note,
    created_at: e.created_at,
  };
}

async function creditsAdd(ctx: CommandContext): Promise<number> {
  const [accountId, amountText] = ctx.args;
  const amount = parseUsdAmount(amountText, 'USD', { allowNegative: true });
  const c = await ctx.collections();
  await requireAccount(c, accountId);
  await addCredits(c, accountId, amount, ctx.values.note?.trim() || null);
  const balance = await accountBalance(c, accountId);
  if (ctx.json) {
    printJson(ctx, { account_id: accountId, amount_usd: amount, balance_usd: balance });
  } else {
    ctx.out(
      `${amount < 0 ? 'Removed' : 'Added'} ${formatUsd(Math.abs(amount))} ${amount < 0 ? 'from' : 'to'} account ${accountId}.`,
    );
    ctx.out(`Balance: ${formatUsd(balance)}`);
  }
  return EXIT_OK;
}

async function ledger(ctx: CommandContext): Promise<number> {
  const limit =
    ctx.values.limit === undefined ? 100 : parsePositiveInt(ctx.values.limit, '--limit');
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  const [entries, total, balance] = await Promise.all([
    listEntries(c, account._id, limit),
    c.ledger.countDocuments({ account_id: account._id }),
    accountBalance(c, account._id),
  ]);
  if (ctx.json) {
    printJson(ctx, {
      account_id: account._id,
      balance_usd: balance,
      total_entries: total,
      entries: entries.map(entryJson),
    });
    return EXIT_OK;
  }
  ctx.out(`Account ${account._id} (${account.name})`);
  ctx.out(`Balance: ${formatUsd(balance)}`);
  ctx.out('');
  if (entries.length === 0) {
    ctx.out('No ledger entries.');
    return EXIT_OK;
  }
  const rows = entries.map((e) => [
    formatDate(e.created_at),
    e.kind,
    formatUsd(e.amount_usd),
    e.run_id ?? e.note ?? '',
  ]);
  ctx.out(table(['DATE', 'KIND', 'AMOUNT', 'RUN / NOTE'], rows).join('\n'));
  if (total > entries.length)
    ctx.out(`(the oldest ${entries.length} of ${total} entries; raise --limit for more)`);
  return EXIT_OK;
}
