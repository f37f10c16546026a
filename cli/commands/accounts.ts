/** The `accounts` commands: create, show, rate limits (D16), the provider-call cap (D36), the storage of uploads (D19) and the webhook signing secret (D20). */
import type { AccountDoc } from '../../store/documents';
import {
  countLiveKeys,
  type AccountCap,
  createAccount,
  rotateWebhookSecret,
  setAccountRateLimits,
  setAccountCap,
  webhookSecret,
} from '../../store/accounts';
import { accountBalance } from '../../store/ledger';
import {
  EXIT_OK,
  UsageError,
  parsePositiveInt,
  parseUsdAmount,
  printJson,
  requireAccount,
  type Command,
  type CommandContext,
} from '../command';
import { fields, formatDate, formatUsd } from '../format';

export const accountCommands: Command[] = [
  { words: ['accounts', 'create'], args: [], options: ['name', 'credits'], run: accountsCreate },
  { words: ['accounts', 'show'], args: ['ACCOUNT_ID'], options: [], run: accountsShow },
  {
    words: ['accounts', 'limits'],
    args: ['ACCOUNT_ID'],
    options: ['starts', 'requests'],
    run: accountsLimits,
  },
  {
    words: ['accounts', 'provider-calls'],
    args: ['ACCOUNT_ID'],
    options: ['max'],
    run: capCommand('max_provider_calls', (cap) =>
      cap === null
        ? 'the default cap of provider calls at once per worker'
        : `at most ${cap} provider calls at once per worker`,
    ),
  },
  {
    words: ['accounts', 'file-storage'],
    args: ['ACCOUNT_ID'],
    options: ['max'],
    run: capCommand('max_file_storage_bytes', (cap) =>
      cap === null
        ? 'files and stored items within the default quota'
        : `files and stored items within ${cap} bytes`,
    ),
  },
  {
    words: ['accounts', 'workflow-storage'],
    args: ['ACCOUNT_ID'],
    options: ['max'],
    run: capCommand('max_workflow_storage_bytes', (cap) =>
      cap === null
        ? 'published workflows within the default quota'
        : `published workflows within ${cap} bytes`,
    ),
  },
  {
    words: ['accounts', 'webhook-secret'],
    args: ['ACCOUNT_ID'],
    options: ['rotate'],
    run: accountsWebhookSecret,
  },
];

function accountJson(a: AccountDoc, balanceUsd: number) {
  return {
    id: a._id,
    name: a.name,
    balance_usd: balanceUsd,
    rate_limits: a.rate_limits ?? null,
    max_provider_calls: a.max_provider_calls ?? null,
    max_file_storage_bytes: a.max_file_storage_bytes ?? null,
    max_workflow_storage_bytes: a.max_workflow_storage_bytes ?? null,
    created_at: a.created_at,
  };
}

/** D16 limits as people read them; absent ones are the service's configured defaults. */
function formatLimits(limits: AccountDoc['rate_limits']): string {
  const one = (n: number | undefined) => (n === undefined ? 'default' : String(n));
  return `${one(limits?.starts_per_minute)} starts/min, ${one(limits?.requests_per_minute)} requests/min`;
}

async function accountsCreate(ctx: CommandContext): Promise<number> {
  const name = ctx.values.name?.trim();
  if (!name) throw new UsageError('accounts create: --name NAME is required');
  const creditsUsd =
    ctx.values.credits === undefined
      ? undefined
      : parseUsdAmount(ctx.values.credits, '--credits', { allowNegative: false, allowZero: true });
  const c = await ctx.collections();
  const account = await createAccount(c, { name, creditsUsd });
  const balance = await accountBalance(c, account._id);
  if (ctx.json) {
    printJson(ctx, accountJson(account, balance));
  } else {
    ctx.out(`Created account ${account._id}`);
    ctx.out(
      fields([
        ['name', account.name],
        ['balance', formatUsd(balance)],
      ]).join('\n'),
    );
  }
  return EXIT_OK;
}

async function accountsShow(ctx: CommandContext): Promise<number> {
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  const [keys, balance] = await Promise.all([
    countLiveKeys(c, account._id),
    accountBalance(c, account._id),
  ]);
  if (ctx.json) {
    printJson(ctx, { ...accountJson(account, balance), live_keys: keys });
  } else {
    ctx.out(`Account ${account._id}`);
    ctx.out(
      fields([
        ['name', account.name],
        ['balance', formatUsd(balance)],
        ['rate limits', formatLimits(account.rate_limits)],
        ['provider calls', String(account.max_provider_calls ?? 'default')],
        ['file storage', String(account.max_file_storage_bytes ?? 'default')],
        ['workflow storage', String(account.max_workflow_storage_bytes ?? 'default')],
        ['created', formatDate(account.created_at)],
        ['live keys', String(keys)],
      ]).join('\n'),
    );
  }
  return EXIT_OK;
}

async function accountsLimits(ctx: CommandContext): Promise<number> {
  const limit = (text: string | undefined, what: string) =>
    text === undefined
      ? undefined
      : text.trim() === 'default'
        ? null
        : parsePositiveInt(text.trim(), what);
  const change = {
    starts_per_minute: limit(ctx.values.starts, '--starts'),
    requests_per_minute: limit(ctx.values.requests, '--requests'),
  };
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  // Without options this only shows the limits in force.
  const unchanged =
    change.starts_per_minute === undefined && change.requests_per_minute === undefined;
  const limits = unchanged
    ? (account.rate_limits ?? null)
    : await setAccountRateLimits(c, account._id, change);
  if (ctx.json) {
    printJson(ctx, { account_id: account._id, rate_limits: limits });
  } else {
    ctx.out(`Account ${account._id}: ${formatLimits(limits)}`);
  }
  return EXIT_OK;
}

/**
 * An account's own cap, shown, set with `--max N` or returned to the operator's default with
 * `--max default`: its provider calls in flight per worker process (D36, ACCOUNT_MAX_PROVIDER_CALLS;
 * workers read it within 5 s), what its files may hold (D19, FILE_STORAGE_MAX_BYTES) and what
 * its published workflows may hold (D26, WORKFLOW_STORAGE_MAX_BYTES; API processes read both
 * within 30 s).
 */
function capCommand(cap: AccountCap, describe: (value: number | null) => string) {
  return async (ctx: CommandContext): Promise<number> => {
    const text = ctx.values.max === undefined ? undefined : String(ctx.values.max).trim();
    const c = await ctx.collections();
    const account = await requireAccount(c, ctx.args[0]);
    let value = account[cap] ?? null;
    if (text !== undefined) {
      value = text === 'default' ? null : parsePositiveInt(text, '--max');
      await setAccountCap(c, account._id, cap, value);
    }
    if (ctx.json) printJson(ctx, { account_id: account._id, [cap]: value });
    else ctx.out(`Account ${account._id}: ${describe(value)}`);
    return EXIT_OK;
  };
}

async function accountsWebhookSecret(ctx: CommandContext): Promise<number> {
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  const rotated = ctx.values.rotate === true;
  // Shown on request, unlike API keys: receivers need the secret itself to verify signatures (D20).
  const secret = rotated
    ? await rotateWebhookSecret(c, account._id)
    : await webhookSecret(c, account._id);
  if (ctx.json) {
    printJson(ctx, { account_id: account._id, webhook_secret: secret, rotated });
  } else {
    ctx.out(`${rotated ? 'New webhook' : 'Webhook'} signing secret of account ${account._id}:`);
    ctx.out('');
    ctx.out(`  ${secret}`);
    ctx.out('');
    ctx.out('Receivers verify webhook-signature with it (Standard Webhooks).');
    if (rotated) ctx.out('The old secret no longer signs anything: update your receivers now.');
  }
  return EXIT_OK;
}
