/**
 * The `workflows` commands: validate and publish a workflow file, as POST /api/v1/workflows does;
 * count an account's workflow storage again from its versions (D26).
 */
import { readFile } from 'node:fs/promises';
import { DomainError } from '../../domain/errors';
import { publishWorkflow } from '../../store/publish-workflow';
import { publishedBytes, recountStoredBytes } from '../../store/workflows';
import {
  CliError,
  EXIT_FAILED,
  EXIT_OK,
  printJson,
  requireAccount,
  type Command,
  type CommandContext,
} from '../command';
import { fields } from '../format';

export const workflowCommands: Command[] = [
  {
    words: ['workflows', 'publish'],
    args: ['ACCOUNT_ID', 'FILE'],
    options: [],
    run: workflowsPublish,
  },
  {
    words: ['workflows', 'recount-storage'],
    args: ['ACCOUNT_ID'],
    options: [],
    run: workflowsRecountStorage,
  },
];

/** D26: the account's workflow storage counted again from its versions (store/workflows.ts recountStoredBytes). */
async function workflowsRecountStorage(ctx: CommandContext): Promise<number> {
  const [accountId] = ctx.args;
  const c = await ctx.collections();
  await requireAccount(c, accountId);
  const changed = await recountStoredBytes(c, accountId);
  const total = await publishedBytes(c, accountId);
  if (ctx.json) {
    printJson(ctx, {
      account_id: accountId,
      stored_bytes: total,
      changed: changed.map((w) => ({
        workflow_id: w.workflowId,
        slug: w.slug,
        stored_bytes: w.after,
        was: w.before,
      })),
    });
    return EXIT_OK;
  }
  ctx.out(`Published workflows of ${accountId} hold ${total} bytes`);
  if (changed.length === 0) ctx.out('Every workflow was counted right.');
  for (const w of changed)
    ctx.out(
      `  ${w.slug} (${w.workflowId}): ${w.before === null ? 'not counted' : `${w.before} bytes`} → ${w.after} bytes`,
    );
  return EXIT_OK;
}

async function workflowsPublish(ctx: CommandContext): Promise<number> {
  const [accountId, file] = ctx.args;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new CliError(
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
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
    if (err instanceof DomainError && err.details?.length) {
      ctx.err(
        `wrs: ${file} is not a valid workflow (${err.details.length} ${err.details.length === 1 ? 'problem' : 'problems'}):`,
      );
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
  ctx.out(
    fields([
      ['workflow', result.workflow_id],
      ['version', result.version_id],
    ]).join('\n'),
  );
  ctx.out('Inputs:');
  if (result.inputs.length === 0) ctx.out('  (none)');
  for (const i of result.inputs) ctx.out(`  ${i.key} (${i.type}${i.required ? ', required' : ''})`);
  ctx.out('Outputs:');
  if (result.outputs.length === 0) ctx.out('  (none)');
  for (const o of result.outputs) ctx.out(`  ${o.key}`);
  return EXIT_OK;
}
