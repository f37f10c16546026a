/** The `keys` commands (D6): issue a key (its secret shown once), list an account's keys, revoke one. */
import type { ApiKeyDoc } from '../../store/documents';
import { findKeyRecord, issueKey, listKeys, revokeKey } from '../../store/accounts';
import {
  CliError,
  EXIT_OK,
  printJson,
  requireAccount,
  type Command,
  type CommandContext,
} from '../command';
import { formatDate, table } from '../format';

export const keyCommands: Command[] = [
  { words: ['keys', 'create'], args: ['ACCOUNT_ID'], options: ['name'], run: keysCreate },
  { words: ['keys', 'list'], args: ['ACCOUNT_ID'], options: [], run: keysList },
  { words: ['keys', 'revoke'], args: ['KEY_ID'], options: [], run: keysRevoke },
];

function keyJson(k: Omit<ApiKeyDoc, 'hash'>) {
  // Never the hash (D6): nothing outside key lookup has a use for it.
  return {
    id: k._id,
    account_id: k.account_id,
    name: k.name,
    hint: k.hint,
    created_at: k.created_at,
    revoked_at: k.revoked_at,
  };
}

async function keysCreate(ctx: CommandContext): Promise<number> {
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  const name = ctx.values.name?.trim() || null;
  const { secret, key } = await issueKey(c, account._id, name);
  const warning = 'Store this secret now: only its hash is kept, it cannot be shown again.';
  if (ctx.json) {
    printJson(ctx, { ...keyJson(key), secret, warning });
  } else {
    ctx.out(`Created key ${key._id} for account ${account._id}${name ? ` (${name})` : ''}`);
    ctx.out('');
    ctx.out(`  ${secret}`);
    ctx.out('');
    ctx.out(warning);
  }
  return EXIT_OK;
}

async function keysList(ctx: CommandContext): Promise<number> {
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  const keys = await listKeys(c, account._id);
  if (ctx.json) {
    printJson(ctx, keys.map(keyJson));
  } else if (keys.length === 0) {
    ctx.out(`Account ${account._id} has no keys.`);
  } else {
    const rows = keys.map((k) => [
      k._id,
      `${k.hint}...`,
      k.name ?? '-',
      formatDate(k.created_at),
      formatDate(k.revoked_at),
    ]);
    ctx.out(table(['ID', 'HINT', 'NAME', 'CREATED', 'REVOKED'], rows).join('\n'));
  }
  return EXIT_OK;
}

async function keysRevoke(ctx: CommandContext): Promise<number> {
  const c = await ctx.collections();
  const keyId = ctx.args[0];
  const revokedNow = await revokeKey(c, keyId);
  const key = await findKeyRecord(c, keyId);
  if (!key) throw new CliError(`no key ${keyId}`);
  if (ctx.json) {
    printJson(ctx, { ...keyJson(key), already_revoked: !revokedNow });
  } else if (revokedNow) {
    ctx.out(`Revoked key ${key._id} (${key.hint}...) of account ${key.account_id}.`);
  } else {
    ctx.out(`Key ${key._id} was already revoked at ${formatDate(key.revoked_at)}.`);
  }
  return EXIT_OK;
}
