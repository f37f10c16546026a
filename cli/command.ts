/**
 * What every operator CLI command shares: the options the command line may carry, the context a
 * command runs in, its two kinds of failure, the exit codes and the argument helpers. The command
 * groups (cli/commands/*) build on this; cli/run-cli.ts parses, dispatches and reports.
 */
import type { Db } from 'mongodb';
import type { Collections } from '../store/db';
import { findAccount } from '../store/accounts';
import type { RunStopper } from './run-stopper';
import type { AccountDoc } from '../store/documents';

/** Exit codes: 0 ok, 1 the operation failed, 2 the command line was wrong. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** Every option of every command, in parseArgs' terms; each command names the ones it takes. */
export const CLI_OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  name: { type: 'string' },
  credits: { type: 'string' },
  note: { type: 'string' },
  limit: { type: 'string' },
  events: { type: 'boolean' },
  starts: { type: 'string' },
  requests: { type: 'string' },
  max: { type: 'string' },
  rotate: { type: 'boolean' },
  yes: { type: 'boolean' },
} as const;

export type CliOptionName = keyof typeof CLI_OPTIONS;
export type CliOptionValues = {
  [K in CliOptionName]?: (typeof CLI_OPTIONS)[K]['type'] extends 'boolean' ? boolean : string;
};

/** What a command gets: its positional arguments, the options, and where to read and write. */
export interface CommandContext {
  args: string[];
  values: CliOptionValues;
  json: boolean;
  collections: () => Promise<Collections>;
  /** The database (GridFS files), connected on first use like `collections`. */
  db: () => Promise<Db>;
  /** D39: Temporal, to stop a live run's workflows before deleting it; connected on first use. */
  runStopper: () => Promise<RunStopper>;
  out: (line: string) => void;
  err: (line: string) => void;
}

/** One command: the words that name it, its positional arguments, the options it takes, its work. */
export interface Command {
  words: string[];
  args: string[];
  options: CliOptionName[];
  run(ctx: CommandContext): Promise<number>;
}

/** A failed operation: its message goes to stderr and the exit code is 1. */
export class CliError extends Error {}

/** A wrong command line: the message and the usage go to stderr and the exit code is 2. */
export class UsageError extends Error {}

export function parseUsdAmount(
  text: string,
  what: string,
  opts: { allowNegative: boolean; allowZero?: boolean },
): number {
  const value = /^-?(\d+(\.\d*)?|\.\d+)$/.test(text.trim()) ? Number(text) : NaN;
  if (!Number.isFinite(value))
    throw new UsageError(`${what} must be a number of US dollars, got \`${text}\``);
  if (value === 0 && !opts.allowZero) throw new UsageError(`${what} must not be zero`);
  if (value < 0 && !opts.allowNegative) throw new UsageError(`${what} must be positive`);
  return value;
}

export function parsePositiveInt(text: string, what: string): number {
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < 1)
    throw new UsageError(`${what} must be a positive integer, got \`${text}\``);
  return value;
}

export async function requireAccount(c: Collections, accountId: string): Promise<AccountDoc> {
  const account = await findAccount(c, accountId);
  if (!account) throw new CliError(`no account ${accountId}`);
  return account;
}

export function printJson(ctx: CommandContext, value: unknown): void {
  ctx.out(JSON.stringify(value, null, 2));
}
