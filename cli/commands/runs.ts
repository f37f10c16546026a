/** The `runs` command: the stored run record (status, output, error, cost, times, optionally events). */
import type { RunDoc } from '../../store/documents';
import { findRunRecord } from '../../store/runs';
import { CliError, EXIT_OK, printJson, type Command, type CommandContext } from '../command';
import { fields, formatDate, formatUsd } from '../format';

export const runCommands: Command[] = [
  { words: ['runs', 'show'], args: ['RUN_ID'], options: ['events'], run: runsShow },
];

async function runsShow(ctx: CommandContext): Promise<number> {
  const c = await ctx.collections();
  const run = await findRunRecord(c, ctx.args[0]);
  if (!run) throw new CliError(`no run ${ctx.args[0]}`);
  const withEvents = ctx.values.events === true;
  if (ctx.json) {
    const { _id, events, payload_secret: _secret, ...rest } = run; // the D39 secret is never shown
    printJson(ctx, {
      id: _id,
      ...rest,
      event_count: events?.length ?? null,
      ...(withEvents ? { events } : {}),
    });
    return EXIT_OK;
  }
  printRun(ctx, run, withEvents);
  return EXIT_OK;
}

function printRun(ctx: CommandContext, run: RunDoc, withEvents: boolean): void {
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
      ['events', run.events ? String(run.events.length) : '-'],
    ]).join('\n'),
  );
  if (!run.finalized) {
    ctx.out('');
    ctx.out(
      'Not finished: the stored status lags behind; GET /api/v1/runs/{id} (or the Temporal UI) shows the live state.',
    );
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
