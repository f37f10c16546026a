/**
 * The `runs` commands: the stored run record (status, output, error, cost, times, optionally
 * events), and deleting a run or every run of an account (D39).
 */
import type { EventsView } from '../../domain/run-log';
import type { RunDoc } from '../../store/documents';
import { findRunLog, findRunRecord, runExists, runInputs } from '../../store/runs';
import { eraseRun } from '../../store/erase-run';
import { accountRunIds } from '../../store/run-search';
import {
  CliError,
  EXIT_OK,
  UsageError,
  printJson,
  requireAccount,
  type Command,
  type CommandContext,
} from '../command';
import { fields, formatDate, formatUsd } from '../format';

export const runCommands: Command[] = [
  { words: ['runs', 'show'], args: ['RUN_ID'], options: ['events'], run: runsShow },
  { words: ['runs', 'delete'], args: ['RUN_ID'], options: [], run: runsDelete },
  {
    words: ['accounts', 'delete-runs'],
    args: ['ACCOUNT_ID'],
    options: ['yes'],
    run: accountRunsDelete,
  },
];

/** Runs read per page when deleting an account's runs, and deleted at once (each live one waits for its cancel). */
const PAGE = 100;
const AT_ONCE = 8;

/**
 * D39: stops the run's workflows if they are open (Temporal; a finalized run's may not have closed
 * yet), then erases everything of it from the store.
 */
async function deleteOne(ctx: CommandContext, runId: string): Promise<void> {
  await (await ctx.runStopper()).stop(runId);
  await eraseRun(await ctx.collections(), await ctx.db(), runId);
}

async function runsDelete(ctx: CommandContext): Promise<number> {
  const c = await ctx.collections();
  const runId = ctx.args[0];
  if (!(await runExists(c, runId))) throw new CliError(`no run ${runId}`);
  await deleteOne(ctx, runId);
  if (ctx.json) printJson(ctx, { id: runId, object: 'run', deleted: true });
  else ctx.out(`Deleted run ${runId}.`);
  return EXIT_OK;
}

async function accountRunsDelete(ctx: CommandContext): Promise<number> {
  const c = await ctx.collections();
  const account = await requireAccount(c, ctx.args[0]);
  if (ctx.values.yes !== true)
    throw new UsageError(
      'accounts delete-runs: deletes every run of the account for good; add --yes to confirm',
    );
  let deleted = 0;
  let before: string | undefined;
  for (;;) {
    const page = await accountRunIds(c, account._id, before, PAGE);
    if (page.length === 0) break;
    for (let i = 0; i < page.length; i += AT_ONCE)
      await Promise.all(page.slice(i, i + AT_ONCE).map((r) => deleteOne(ctx, r._id)));
    deleted += page.length;
    before = page.at(-1)!._id;
  }
  if (ctx.json) printJson(ctx, { account_id: account._id, deleted });
  else ctx.out(`Deleted ${deleted} run${deleted === 1 ? '' : 's'} of ${account._id}.`);
  return EXIT_OK;
}

async function runsShow(ctx: CommandContext): Promise<number> {
  const c = await ctx.collections();
  const run = await findRunRecord(c, ctx.args[0]);
  if (!run) throw new CliError(`no run ${ctx.args[0]}`);
  // A finished run's log, compact (a big run's two million events are made one at a time, if asked for).
  const log = (await findRunLog(c, run._id))?.log ?? null;
  const withEvents = ctx.values.events === true;
  if (ctx.json) {
    const { _id, events: _none, payload_secret: _secret, ...rest } = run; // the D39 secret is never shown
    printJson(ctx, {
      id: _id,
      ...rest,
      event_count: log?.length ?? null,
      ...(withEvents ? { events: log?.toArray() ?? null } : {}),
    });
    return EXIT_OK;
  }
  // D38: a re-run's inputs are its first ancestor's (null: erased with it, D39).
  printRun(
    ctx,
    run,
    withEvents ? log : null,
    log?.length,
    run.inputs_from ? await runInputs(c, run) : run.inputs,
  );
  return EXIT_OK;
}

function printRun(
  ctx: CommandContext,
  run: RunDoc,
  events: EventsView | null,
  eventCount: number | undefined,
  inputs: Record<string, unknown> | null,
): void {
  ctx.out(`Run ${run._id}`);
  ctx.out(
    fields([
      ['status', run.status],
      ['account', run.account_id],
      ['key', run.key_id],
      [
        'workflow',
        `${run.published_workflow_id} version ${run.version} (${run.published_workflow_version_id})`,
      ],
      ['created', formatDate(run.created_at)],
      ['completed', formatDate(run.completed_at)],
      ['total cost', formatUsd(run.total_cost)],
      ['error', run.error ?? '-'],
      ['events', eventCount === undefined ? '-' : String(eventCount)],
    ]).join('\n'),
  );
  if (!run.finalized) {
    ctx.out('');
    ctx.out(
      'Not finished: the stored status lags behind; GET /api/v1/runs/{id} (or the Temporal UI) shows the live state.',
    );
  }
  ctx.out('');
  ctx.out(run.inputs_from ? `Inputs (those of run ${run.inputs_from}):` : 'Inputs:');
  ctx.out(inputs ? indentJson(inputs) : '  (erased: that run was deleted)');
  // D35: a big run's items are kept in pages, its record holds an empty list in their place.
  const stored = Object.entries(run.stored_outputs ?? {});
  const inRecord = Object.fromEntries(
    Object.entries(run.output ?? {}).filter(([key]) => !run.stored_outputs?.[key]),
  );
  if (Object.keys(inRecord).length > 0 || (run.output && stored.length === 0)) {
    ctx.out('Output:');
    ctx.out(indentJson(inRecord));
  }
  if (stored.length > 0) {
    ctx.out('Output items stored apart (read them through the API or its results file):');
    for (const [key, { count }] of stored)
      ctx.out(`  ${key}: ${count} items, stored apart: GET /api/v1/runs/${run._id}/outputs/${key}`);
  }
  if (events) {
    ctx.out('Events:');
    for (let seq = 0; seq < events.length; seq++) ctx.out(`  ${events.jsonAt(seq)}`);
  }
}

function indentJson(value: unknown): string {
  return JSON.stringify(value, null, 2)
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}
