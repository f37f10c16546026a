/**
 * The operator CLI (D27): accounts, keys, credits, the ledger, publishing and reading runs,
 * straight against the service's MongoDB. `runCli` parses a command line, finds its command in
 * the groups under cli/commands, runs it and turns the outcome into an exit code; tests call it
 * directly. cli/wrs.ts only wires process.env, the database connection and stdout/stderr.
 */
import type { Db } from 'mongodb';
import { parseArgs } from 'node:util';
import { DomainError } from '../domain/errors';
import { terminalSafe } from './format';
import type { Collections } from '../store/db';
import {
  CLI_OPTIONS,
  EXIT_FAILED,
  EXIT_OK,
  EXIT_USAGE,
  UsageError,
  type CliOptionName,
  type CliOptionValues,
  type Command,
  type CommandContext,
} from './command';
import { accountCommands } from './commands/accounts';
import { creditCommands } from './commands/credits';
import { keyCommands } from './commands/keys';
import { runCommands } from './commands/runs';
import type { RunStopper } from './run-stopper';
import { workflowCommands } from './commands/workflows';

export interface CliDeps {
  /** The service's collections, or a function that connects on first use (so `--help` needs no database). */
  collections: Collections | (() => Promise<Collections>);
  /** The database (GridFS files), or a function that connects on first use. */
  db?: Db | (() => Promise<Db>);
  /** D39: stops live runs before they are deleted (Temporal); connected on first use. */
  runStopper?: RunStopper | (() => Promise<RunStopper>);
  out: (line: string) => void;
  err: (line: string) => void;
}

export const USAGE = `Usage: npm run cli -- <command> [options]

Accounts
  accounts create --name NAME [--credits USD]   create an account (optionally with an opening balance)
  accounts show ACCOUNT_ID                      name, balance, rate limits and creation time
  accounts limits ACCOUNT_ID [--starts N] [--requests N]
                                                per-minute rate limits of the account's keys (D16);
                                                \`default\` returns one to the service default
  accounts provider-calls ACCOUNT_ID [--max N]  the account's provider calls in flight at most per worker (D36);
                                                \`default\` returns it to ACCOUNT_MAX_PROVIDER_CALLS
  accounts file-storage ACCOUNT_ID [--max BYTES]
                                                what the account's files and big runs' items may hold at once (D19);
                                                \`default\` returns it to FILE_STORAGE_MAX_BYTES
  accounts workflow-storage ACCOUNT_ID [--max BYTES]
                                                what the account's published workflow versions may hold (D26);
                                                \`default\` returns it to WORKFLOW_STORAGE_MAX_BYTES
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
  workflows recount-storage ACCOUNT_ID          count what the account's workflows hold again from their versions
                                                (D26): after an upgrade from a release before the quota
  runs show RUN_ID [--events]                   the stored run record (status, output, error, cost, times)
  runs delete RUN_ID                            delete a run and everything kept of it (D39); a live run is
                                                cancelled first (terminated after 15 s); needs TEMPORAL_ADDRESS
  accounts delete-runs ACCOUNT_ID --yes         delete every run of the account, as \`runs delete\` does

Options
  --json    machine-readable output (one JSON document on stdout)
  --help    this text

Configuration comes from the environment, as for the service: MONGODB_URI, MONGODB_DB.
Exit codes: 0 ok, 1 the operation failed, 2 usage error.`;

// In USAGE's order: an unknown subcommand lists its group's subcommands in this order.
const COMMANDS: Command[] = [
  ...accountCommands,
  ...keyCommands,
  ...creditCommands,
  ...workflowCommands,
  ...runCommands,
];

// parseArgs takes `-5` for an option; negative amounts (`credits add acct_x -5`) are hidden from it.
const NEGATIVE = /^-\d+(\.\d+)?$/;
const MASK = '\u0000neg';
const unmask = (s: string) => (s.startsWith(MASK) ? s.slice(MASK.length) : s);

/** Runs one command line (without `node` and the script); resolves to the exit code. Never throws. */
export async function runCli(argv: string[], given: CliDeps): Promise<number> {
  // Lines may hold tenants' words (a run's error quotes a remote server): shown, never obeyed.
  const deps: CliDeps = {
    ...given,
    out: (line) => given.out(terminalSafe(line)),
    err: (line) => given.err(terminalSafe(line)),
  };
  let command: Command;
  let ctx: CommandContext;
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
  const synopsis = line
    ? line.trim().split(/\s{2,}/)[0]
    : [...command.words, ...command.args].join(' ');
  return `Usage: npm run cli -- ${synopsis}`;
}

function parse(argv: string[]): { positionals: string[]; values: CliOptionValues; help: boolean } {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv.map((a) => (NEGATIVE.test(a) ? MASK + a : a)),
      options: CLI_OPTIONS,
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message.replaceAll(MASK, '') : String(err));
  }
  const values: CliOptionValues = {};
  for (const [k, v] of Object.entries(parsed.values)) {
    (values as Record<string, unknown>)[k] = typeof v === 'string' ? unmask(v) : v;
  }
  return { positionals: parsed.positionals.map(unmask), values, help: values.help === true };
}

function resolve(
  positionals: string[],
  values: CliOptionValues,
  deps: CliDeps,
): { command: Command; ctx: CommandContext } {
  if (positionals.length === 0) throw new UsageError('no command given');
  const command = COMMANDS.find((c) => c.words.every((w, i) => positionals[i] === w));
  if (!command) {
    const group = COMMANDS.filter((c) => c.words[0] === positionals[0] && c.words.length > 1);
    if (group.length > 0) {
      const given =
        positionals[1] === undefined
          ? 'no subcommand given'
          : `unknown subcommand \`${positionals[1]}\``;
      throw new UsageError(
        `${positionals[0]}: ${given} (one of: ${group.map((c) => c.words[1]).join(', ')})`,
      );
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
  for (const option of Object.keys(values) as CliOptionName[]) {
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
  const lazy = <T>(source: T | (() => Promise<T>) | undefined, what: string) => {
    let made: Promise<T> | undefined;
    return () =>
      (made ??=
        source === undefined
          ? Promise.reject(new Error(`${what} is not available here`))
          : typeof source === 'function'
            ? (source as () => Promise<T>)()
            : Promise.resolve(source));
  };
  return {
    command,
    ctx: {
      args,
      values,
      json: values.json === true,
      collections,
      db: lazy(deps.db, 'the database'),
      runStopper: lazy(deps.runStopper, 'Temporal'),
      out: deps.out,
      err: deps.err,
    },
  };
}

/** Prints a failure without a stack trace; a publishing error lists every problem. */
function reportFailure(err: unknown, print: (line: string) => void): void {
  if (err instanceof DomainError && err.details?.length) {
    print(`wrs: ${err.details.length === 1 ? 'one problem' : `${err.details.length} problems`}:`);
    for (const d of err.details) print(`  ${d.field}: ${d.problem}`);
    return;
  }
  const message = err instanceof Error ? err.message : String(err);
  print(`wrs: ${message || 'failed'}`);
}
