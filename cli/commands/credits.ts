/**
 * The credit commands (D17): `credits add` changes a balance, `credits` shows it with what runs in
 * progress hold of it, `ledger` shows the same and the entries.
 */
import type { LedgerDoc } from '../../store/documents';
import { addCredits } from '../../store/accounts';
import { accountCredit, type AccountCredit } from '../../store/credit-holds';
import { countEntries, listEntries } from '../../store/ledger';
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
  { words: ['credits'], args: ['ACCOUNT_ID'], options: [], run: credits },
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
    ...(e.released_usd ? { released_usd: e.released_usd } : {}),
  };
}

/** The balance, and (when runs hold some of it) held and available, one line each. */
function creditLines(credit: AccountCredit): string[] {
  const lines = [`Balance: ${formatUsd(credit.balance_usd)}`];
  if (credit.held_usd !== 0) {
    lines.push(`Held by runs in progress: ${formatUsd(credit.held_usd)}`);
    lines.push(`Available to start runs: ${formatUsd(credit.available_usd)}`);
  }
  return lines;
}

async function credits(ctx: CommandContext): Promise<number> {
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  const credit = await accountCredit(c, account._id);
  if (ctx.json) printJson(ctx, { account_id: account._id, ...credit });
  else {
    ctx.out(`Account ${account._id} (${account.name})`);
    for (const line of creditLines(credit)) ctx.out(line);
  }
  return EXIT_OK;
}

async function creditsAdd(ctx: CommandContext): Promise<number> {
  const [accountId, amountText] = ctx.args;
  const amount = parseUsdAmount(amountText, 'USD', { allowNegative: true });
  const c = await ctx.collections();
  await requireAccount(c, accountId);
  await addCredits(c, accountId, amount, ctx.values.note?.trim() || null);
  const credit = await accountCredit(c, accountId);
  if (ctx.json) {
    printJson(ctx, { account_id: accountId, amount_usd: amount, ...credit });
  } else {
    ctx.out(
      `${amount < 0 ? 'Removed' : 'Added'} ${formatUsd(Math.abs(amount))} ${amount < 0 ? 'from' : 'to'} account ${accountId}.`,
    );
    for (const line of creditLines(credit)) ctx.out(line);
  }
  return EXIT_OK;
}

async function ledger(ctx: CommandContext): Promise<number> {
  const limit =
    ctx.values.limit === undefined ? 100 : parsePositiveInt(ctx.values.limit, '--limit');
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  const [entries, total, credit] = await Promise.all([
    listEntries(c, account._id, limit),
    countEntries(c, account._id),
    accountCredit(c, account._id),
  ]);
  if (ctx.json) {
    printJson(ctx, {
      account_id: account._id,
      ...credit,
      total_entries: total,
      entries: entries.map(entryJson),
    });
    return EXIT_OK;
  }
  ctx.out(`Account ${account._id} (${account.name})`);
  for (const line of creditLines(credit)) ctx.out(line);
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
