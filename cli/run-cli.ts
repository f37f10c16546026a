/**
 * The operator CLI (D27): accounts, keys, credits, the ledger, publishing and reading runs,
 * straight against the service's MongoDB. `runCli` holds all of it so tests call it directly;
 * cli/wrs.ts only wires process.env, the database connection and stdout/stderr.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ApiError } from '../domain/errors';
import { publishWorkflow } from '../store/publish-workflow';
import type { Collections } from '../store/db';
import type { AccountDoc, ApiKeyDoc, LedgerDoc, RunDoc } from '../store/documents';
import { addCredits, createAccount, issueKey, revokeKey, rotateWebhookSecret, setAccountRateLimits, webhookSecret } from '../store/accounts';
import { accountBalance, listEntries } from '../store/ledger';
import { findRunRecord } from '../store/runs';
import { fields, formatDate, formatUsd, table } from './format';

export interface CliDeps {
  /** The service's collections, or a function that connects on first use (so `--help` needs no database). */
  collections: Collections | (() => Promise<Collections>);
  out: (line: string) => void;
  err: (line: string) => void;
}

/** Exit codes: 0 ok, 1 the operation failed, 2 the command line was wrong. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

export const USAGE = `Usage: npm run cli -- <command> [options]

Accounts
  accounts create --name NAME [--credits USD]   create an account (optionally with an opening balance)
  accounts show ACCOUNT_ID                      name, balance, rate limits and creation time
  accounts limits ACCOUNT_ID [--starts N] [--requests N]
                                                per-minute rate limits of the account's keys (D16);
                                                \`default\` returns one to the service default
  accounts webhook-secret ACCOUNT_ID [--rotate]
                                                the secret that signs the account's webhooks (D20);
                                                --rotate replaces it (deliveries still retrying use the new one)

API keys (D6)
  keys create ACCOUNT_ID [--name NAME]          issue a key; the secret is shown once, never again
  keys list ACCOUNT_ID                          the account's keys (ids and hints, never secrets)
  keys revoke KEY_ID                            revoke a key; the API refuses it at once

Credits (D17)
  credits add ACCOUNT_ID USD [--note TEXT]      add credits (a negative amount corrects a balance)
  ledger ACCOUNT_ID [--limit N]                 the balance and the ledger entries, oldest first (default 100)

Workflows and runs
  workflows publish ACCOUNT_ID FILE.json        validate and publish a workflow, as POST /api/v1/workflows does
  runs show RUN_ID [--events]                   the stored run record (status, output, error, cost, times)

Options
  --json    machine-readable output (one JSON document on stdout)
  --help    this text

Configuration comes from the environment, as for the service: MONGODB_URI, MONGODB_DB.
Exit codes: 0 ok, 1 the operation failed, 2 usage error.`;

/** A failed operation: its message goes to stderr and the exit code is 1. */
export class CliError extends Error {}

/** A wrong command line: the message and the usage go to stderr and the exit code is 2. */
class UsageError extends Error {}

const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  name: { type: 'string' },
  credits: { type: 'string' },
  note: { type: 'string' },
  limit: { type: 'string' },
  events: { type: 'boolean' },
  starts: { type: 'string' },
  requests: { type: 'string' },
  rotate: { type: 'boolean' },
} as const;

type OptionName = keyof typeof OPTIONS;
type Values = { [K in OptionName]?: (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

interface Context {
  args: string[];
  values: Values;
  json: boolean;
  collections: () => Promise<Collections>;
  out: (line: string) => void;
  err: (line: string) => void;
}

interface Command {
  words: string[];
  args: string[];
  options: OptionName[];
  run(ctx: Context): Promise<number>;
}

const COMMANDS: Command[] = [
  { words: ['accounts', 'create'], args: [], options: ['name', 'credits'], run: accountsCreate },
  { words: ['accounts', 'show'], args: ['ACCOUNT_ID'], options: [], run: accountsShow },
  { words: ['accounts', 'limits'], args: ['ACCOUNT_ID'], options: ['starts', 'requests'], run: accountsLimits },
  { words: ['accounts', 'webhook-secret'], args: ['ACCOUNT_ID'], options: ['rotate'], run: accountsWebhookSecret },
  { words: ['keys', 'create'], args: ['ACCOUNT_ID'], options: ['name'], run: keysCreate },
  { words: ['keys', 'list'], args: ['ACCOUNT_ID'], options: [], run: keysList },
  { words: ['keys', 'revoke'], args: ['KEY_ID'], options: [], run: keysRevoke },
  { words: ['credits', 'add'], args: ['ACCOUNT_ID', 'USD'], options: ['note'], run: creditsAdd },
  { words: ['ledger'], args: ['ACCOUNT_ID'], options: ['limit'], run: ledger },
  { words: ['workflows', 'publish'], args: ['ACCOUNT_ID', 'FILE'], options: [], run: workflowsPublish },
  { words: ['runs', 'show'], args: ['RUN_ID'], options: ['events'], run: runsShow },
];

// parseArgs takes `-5` for an option; negative amounts (`credits add acct_x -5`) are hidden from it.
const NEGATIVE = /^-\d+(\.\d+)?$/;
const MASK = '\u0000neg';
const unmask = (s: string) => (s.startsWith(MASK) ? s.slice(MASK.length) : s);

/** Runs one command line (without `node` and the script); resolves to the exit code. Never throws. */
export async function runCli(argv: string[], deps: CliDeps): Promise<number> {
  let command: Command;
  let ctx: Context;
  try {
    const parsed = parse(argv);
    if (parsed.help) {
      deps.out(USAGE);
      return EXIT_OK;
    }
    ({ command, ctx } = resolve(parsed.positionals, parsed.values, deps));
  } catch (err) {
    if (!(err instanceof UsageError)) {
      reportFailure(err, deps.err);
      return EXIT_FAILED;
    }
    deps.err(`wrs: ${err.message}`);
    deps.err('');
    deps.err(USAGE);
    return EXIT_USAGE;
  }
  try {
    return await command.run(ctx);
  } catch (err) {
    if (err instanceof UsageError) {
      deps.err(`wrs: ${err.message}`);
      deps.err(commandUsage(command));
      return EXIT_USAGE;
    }
    reportFailure(err, deps.err);
    return EXIT_FAILED;
  }
}

/** The command's line of USAGE, e.g. `Usage: npm run cli -- credits add ACCOUNT_ID USD [--note TEXT]`. */
function commandUsage(command: Command): string {
  const prefix = `  ${command.words.join(' ')} `;
  const line = USAGE.split('\n').find((l) => l.startsWith(prefix));
  const synopsis = line ? line.trim().split(/\s{2,}/)[0] : [...command.words, ...command.args].join(' ');
  return `Usage: npm run cli -- ${synopsis}`;
}

function parse(argv: string[]): { positionals: string[]; values: Values; help: boolean } {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv.map((a) => (NEGATIVE.test(a) ? MASK + a : a)),
      options: OPTIONS,
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message.replaceAll(MASK, '') : String(err));
  }
  const values: Values = {};
  for (const [k, v] of Object.entries(parsed.values)) {
    (values as Record<string, unknown>)[k] = typeof v === 'string' ? unmask(v) : v;
  }
  return { positionals: parsed.positionals.map(unmask), values, help: values.help === true };
}

function resolve(positionals: string[], values: Values, deps: CliDeps): { command: Command; ctx: Context } {
  if (positionals.length === 0) throw new UsageError('no command given');
  const command = COMMANDS.find((c) => c.words.every((w, i) => positionals[i] === w));
  if (!command) {
    const group = COMMANDS.filter((c) => c.words[0] === positionals[0] && c.words.length > 1);
    if (group.length > 0) {
      const given = positionals[1] === undefined ? 'no subcommand given' : `unknown subcommand \`${positionals[1]}\``;
      throw new UsageError(`${positionals[0]}: ${given} (one of: ${group.map((c) => c.words[1]).join(', ')})`);
    }
    throw new UsageError(`unknown command \`${positionals[0]}\``);
  }
  const name = command.words.join(' ');
  const args = positionals.slice(command.words.length);
  if (args.length < command.args.length) {
    throw new UsageError(`${name}: missing ${command.args.slice(args.length).join(' ')}`);
  }
  if (args.length > command.args.length) {
    throw new UsageError(`${name}: unexpected argument \`${args[command.args.length]}\``);
  }
  for (const option of Object.keys(values) as OptionName[]) {
    if (option !== 'json' && option !== 'help' && !command.options.includes(option)) {
      throw new UsageError(`${name}: option --${option} does not apply`);
    }
  }
  let connected: Promise<Collections> | undefined;
  const collections = () => {
    const source = deps.collections;
    connected ??= typeof source === 'function' ? source() : Promise.resolve(source);
    return connected;
  };
  return { command, ctx: { args, values, json: values.json === true, collections, out: deps.out, err: deps.err } };
}

/** Prints a failure without a stack trace; a publishing error lists every problem. */
function reportFailure(err: unknown, print: (line: string) => void): void {
  if (err instanceof ApiError && err.details?.length) {
    print(`wrs: ${err.details.length === 1 ? 'one problem' : `${err.details.length} problems`}:`);
    for (const d of err.details) print(`  ${d.field}: ${d.problem}`);
    return;
  }
  const message = err instanceof Error ? err.message : String(err);
  print(`wrs: ${message || 'failed'}`);
}

// ---------------------------------------------------------------------------------------------
// Argument helpers

function amountUsd(text: string, what: string, opts: { allowNegative: boolean; allowZero?: boolean }): number {
  const value = /^-?(\d+(\.\d*)?|\.\d+)$/.test(text.trim()) ? Number(text) : NaN;
  if (!Number.isFinite(value)) throw new UsageError(`${what} must be a number of US dollars, got \`${text}\``);
  if (value === 0 && !opts.allowZero) throw new UsageError(`${what} must not be zero`);
  if (value < 0 && !opts.allowNegative) throw new UsageError(`${what} must be positive`);
  return value;
}

function positiveInt(text: string, what: string): number {
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < 1) throw new UsageError(`${what} must be a positive integer, got \`${text}\``);
  return value;
}

async function requireAccount(c: Collections, accountId: string): Promise<AccountDoc> {
  const account = await c.accounts.findOne({ _id: accountId });
  if (!account) throw new CliError(`no account ${accountId}`);
  return account;
}

function printJson(ctx: Context, value: unknown): void {
  ctx.out(JSON.stringify(value, null, 2));
}

function accountJson(a: AccountDoc, balanceUsd: number) {
  return { id: a._id, name: a.name, balance_usd: balanceUsd, rate_limits: a.rate_limits ?? null, created_at: a.created_at };
}

/** D16 limits as people read them; absent ones are the service's configured defaults. */
function formatLimits(limits: AccountDoc['rate_limits']): string {
  const one = (n: number | undefined) => (n === undefined ? 'default' : String(n));
  return `${one(limits?.starts_per_minute)} starts/min, ${one(limits?.requests_per_minute)} requests/min`;
}

function keyJson(k: ApiKeyDoc) {
  // Never the hash (D6): nothing outside key lookup has a use for it.
  return { id: k._id, account_id: k.account_id, name: k.name, hint: k.hint, created_at: k.created_at, revoked_at: k.revoked_at };
}

function entryJson(e: LedgerDoc) {
  return { id: e._id, kind: e.kind, amount_usd: e.amount_usd, run_id: e.run_id, note: e.note, created_at: e.created_at };
}

// ---------------------------------------------------------------------------------------------
// Commands

async function accountsCreate(ctx: Context): Promise<number> {
  const name = ctx.values.name?.trim();
  if (!name) throw new UsageError('accounts create: --name NAME is required');
  const creditsUsd = ctx.values.credits === undefined ? undefined : amountUsd(ctx.values.credits, '--credits', { allowNegative: false, allowZero: true });
  const c = await ctx.collections();
  const account = await createAccount(c, { name, creditsUsd });
  const balance = await accountBalance(c, account._id);
  if (ctx.json) {
    printJson(ctx, accountJson(account, balance));
  } else {
    ctx.out(`Created account ${account._id}`);
    ctx.out(fields([['name', account.name], ['balance', formatUsd(balance)]]).join('\n'));
  }
  return EXIT_OK;
}

async function accountsShow(ctx: Context): Promise<number> {
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  const [keys, balance] = await Promise.all([c.apiKeys.countDocuments({ account_id: account._id, revoked_at: null }), accountBalance(c, account._id)]);
  if (ctx.json) {
    printJson(ctx, { ...accountJson(account, balance), live_keys: keys });
  } else {
    ctx.out(`Account ${account._id}`);
    ctx.out(
      fields([
        ['name', account.name],
        ['balance', formatUsd(balance)],
        ['rate limits', formatLimits(account.rate_limits)],
        ['created', formatDate(account.created_at)],
        ['live keys', String(keys)],
      ]).join('\n'),
    );
  }
  return EXIT_OK;
}

async function accountsLimits(ctx: Context): Promise<number> {
  const limit = (text: string | undefined, what: string) =>
    text === undefined ? undefined : text.trim() === 'default' ? null : positiveInt(text.trim(), what);
  const change = { starts_per_minute: limit(ctx.values.starts, '--starts'), requests_per_minute: limit(ctx.values.requests, '--requests') };
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  // Without options this only shows the limits in force.
  const unchanged = change.starts_per_minute === undefined && change.requests_per_minute === undefined;
  const limits = unchanged ? (account.rate_limits ?? null) : await setAccountRateLimits(c, account._id, change);
  if (ctx.json) {
    printJson(ctx, { account_id: account._id, rate_limits: limits });
  } else {
    ctx.out(`Account ${account._id}: ${formatLimits(limits)}`);
  }
  return EXIT_OK;
}

async function accountsWebhookSecret(ctx: Context): Promise<number> {
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  const rotated = ctx.values.rotate === true;
  // Shown on request, unlike API keys: receivers need the secret itself to verify signatures (D20).
  const secret = rotated ? await rotateWebhookSecret(c, account._id) : await webhookSecret(c, account._id);
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

async function keysCreate(ctx: Context): Promise<number> {
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

async function keysList(ctx: Context): Promise<number> {
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  const keys = await c.apiKeys.find({ account_id: account._id }, { projection: { hash: 0 } }).sort({ _id: 1 }).toArray();
  if (ctx.json) {
    printJson(ctx, keys.map(keyJson));
  } else if (keys.length === 0) {
    ctx.out(`Account ${account._id} has no keys.`);
  } else {
    const rows = keys.map((k) => [k._id, `${k.hint}...`, k.name ?? '-', formatDate(k.created_at), formatDate(k.revoked_at)]);
    ctx.out(table(['ID', 'HINT', 'NAME', 'CREATED', 'REVOKED'], rows).join('\n'));
  }
  return EXIT_OK;
}

async function keysRevoke(ctx: Context): Promise<number> {
  const c = await ctx.collections();
  const keyId = ctx.args[0];
  const revokedNow = await revokeKey(c, keyId);
  const key = await c.apiKeys.findOne({ _id: keyId }, { projection: { hash: 0 } });
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

async function creditsAdd(ctx: Context): Promise<number> {
  const [accountId, amountText] = ctx.args;
  const amount = amountUsd(amountText, 'USD', { allowNegative: true });
  const c = await ctx.collections();
  await requireAccount(c, accountId);
  await addCredits(c, accountId, amount, ctx.values.note?.trim() || null);
  const balance = await accountBalance(c, accountId);
  if (ctx.json) {
    printJson(ctx, { account_id: accountId, amount_usd: amount, balance_usd: balance });
  } else {
    ctx.out(`${amount < 0 ? 'Removed' : 'Added'} ${formatUsd(Math.abs(amount))} ${amount < 0 ? 'from' : 'to'} account ${accountId}.`);
    ctx.out(`Balance: ${formatUsd(balance)}`);
  }
  return EXIT_OK;
}

async function ledger(ctx: Context): Promise<number> {
  const limit = ctx.values.limit === undefined ? 100 : positiveInt(ctx.values.limit, '--limit');
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  const [entries, total, balance] = await Promise.all([
    listEntries(c, account._id, limit),
    c.ledger.countDocuments({ account_id: account._id }),
    accountBalance(c, account._id),
  ]);
  if (ctx.json) {
    printJson(ctx, { account_id: account._id, balance_usd: balance, total_entries: total, entries: entries.map(entryJson) });
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
  if (total > entries.length) ctx.out(`(the oldest ${entries.length} of ${total} entries; raise --limit for more)`);
  return EXIT_OK;
}

async function workflowsPublish(ctx: Context): Promise<number> {
  const [accountId, file] = ctx.args;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (err) {
    throw new CliError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  const c = await ctx.collections();
  await requireAccount(c, accountId);
  let result;
  try {
    result = await publishWorkflow(c, accountId, document);
  } catch (err) {
    if (err instanceof ApiError && err.details?.length) {
      ctx.err(`wrs: ${file} is not a valid workflow (${err.details.length} ${err.details.length === 1 ? 'problem' : 'problems'}):`);
      for (const d of err.details) ctx.err(`  ${d.field}: ${d.problem}`);
      return EXIT_FAILED;
    }
    throw err;
  }
  if (ctx.json) {
    printJson(ctx, result);
    return EXIT_OK;
  }
  ctx.out(`Published ${result.slug} version ${result.version} for account ${accountId}`);
  ctx.out(fields([['workflow', result.workflow_id], ['version', result.version_id]]).join('\n'));
  ctx.out('Inputs:');
  if (result.inputs.length === 0) ctx.out('  (none)');
  for (const i of result.inputs) ctx.out(`  ${i.key} (${i.type}${i.required ? ', required' : ''})`);
  ctx.out('Outputs:');
  if (result.outputs.length === 0) ctx.out('  (none)');
  for (const o of result.outputs) ctx.out(`  ${o.key}`);
  return EXIT_OK;
}

async function runsShow(ctx: Context): Promise<number> {
  const c = await ctx.collections();
  const run = await findRunRecord(c, ctx.args[0]);
  if (!run) throw new CliError(`no run ${ctx.args[0]}`);
  const withEvents = ctx.values.events === true;
  if (ctx.json) {
    const { _id, events, ...rest } = run;
    printJson(ctx, { id: _id, ...rest, event_count: events?.length ?? null, ...(withEvents ? { events } : {}) });
    return EXIT_OK;
  }
  printRun(ctx, run, withEvents);
  return EXIT_OK;
}

function printRun(ctx: Context, run: RunDoc, withEvents: boolean): void {
  ctx.out(`Run ${run._id}`);
  ctx.out(
    fields([
      ['status', run.status],
      ['account', run.account_id],
      ['key', run.key_id],
      ['workflow', `${run.published_workflow_id} version ${run.version} (${run.published_workflow_version_id})`],
      ['created', formatDate(run.created_at)],
      ['completed', formatDate(run.completed_at)],
      ['total cost', formatUsd(run.total_cost)],
      ['error', run.error ?? '-'],
      ['events', run.events ? String(run.events.length) : '-'],
    ]).join('\n'),
  );
  if (!run.finalized) {
    ctx.out('');
    ctx.out('Not finished: the stored status lags behind; GET /api/v1/runs/{id} (or the Temporal UI) shows the live state.');
  }
  ctx.out('');
  ctx.out('Inputs:');
  ctx.out(indentJson(run.inputs));
  if (run.output) {
    ctx.out('Output:');
    ctx.out(indentJson(run.output));
  }
  if (withEvents && run.events) {
    ctx.out('Events:');
    for (const e of run.events) ctx.out(`  ${JSON.stringify(e)}`);
  }
}

function indentJson(value: unknown): string {
  return JSON.stringify(value, null, 2)
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}
