/**
 * D19 checks of file, image and video inputs at start (D4 problems, so a 400 names the field):
 * a `file_...` id must be a file of the caller's account, or the input's default, a file of the
 * workflow's owner (a public workflow's sample file, omitted or given again: a re-run gives its
 * parent's inputs, defaults included); a URL must use https unless configuration allows http. A
 * `json` input that feeds a batch's rows is checked the same way when it is given a file id (D35:
 * the run reads that file's rows), so another account's id is a 400, not a failed run.
 * Whether a URL's host is a private address is decided by the worker when it fetches it
 * (lib/net/ssrf.ts), as only a resolution at connect time can be trusted.
 */
import type { Db } from 'mongodb';
import type { Config } from '../../config';
import type { Contract } from '../../domain/contract';
import { isId } from '../../domain/ids';
import { isPlainObject } from '../../domain/input-values';
import { rowsInputKeys, type WorkflowDocument } from '../../domain/graph';
import type { Problem } from '../../domain/problems';
import { ownedFileIds } from '../../store/files';

const FILE_TYPES = new Set(['image', 'video', 'file']);

/** The problems of the file-typed inputs of a start request (empty when all are fine). */
export async function fileInputProblems(
  deps: { db: Db; config: Pick<Config, 'files'> },
  version: { contract: Contract; graph: WorkflowDocument },
  inputs: unknown,
  owners: { caller: string; workflowOwner: string },
): Promise<Problem[]> {
  const given = isPlainObject(inputs) ? inputs : {};
  const problems: Problem[] = [];
  const wanted = new Map<string, Array<{ key: string; id: string }>>(); // account → file ids to look up
  const rowsKeys = rowsInputKeys(version.graph);
  for (const input of version.contract.inputs) {
    const isJsonRows = input.type === 'json' && rowsKeys.has(input.key);
    if (!FILE_TYPES.has(input.type) && !isJsonRows) continue;
    const fromCaller =
      Object.prototype.hasOwnProperty.call(given, input.key) && given[input.key] !== undefined;
    const value = fromCaller ? given[input.key] : input.default;
    if (typeof value !== 'string') continue; // a wrong type is validateInputs' to report
    if (isId('file', value)) {
      const account = value === input.default ? owners.workflowOwner : owners.caller;
      wanted.set(account, [...(wanted.get(account) ?? []), { key: input.key, id: value }]);
    } else if (isJsonRows) {
      continue; // a JSON string, not a reference
    } else if (/^http:\/\//i.test(value) && !deps.config.files.allowHttpUrls) {
      problems.push({ field: input.key, problem: 'must be an https URL (http is not allowed)' });
    }
  }
  for (const [account, refs] of wanted) {
    const owned = await ownedFileIds(
      deps.db,
      account,
      refs.map((r) => r.id),
    );
    // Another account's file and an unknown id get the same answer: ids reveal nothing.
    for (const ref of refs)
      if (!owned.has(ref.id))
        problems.push({
          field: ref.key,
          problem:
            account === owners.caller
              ? `is not a file of this account (\`${ref.id}\`)`
              : `has as its default the workflow's file \`${ref.id}\`, which no longer exists: give a file of your own`,
        });
  }
  return problems;
}

/**
 * D19 at publish: the defaults every start would refuse (a file that is not the publisher's, an
 * http URL where only https is allowed) are refused when the version is published, each named by
 * its node (`nodes[i].default`), instead of at its first run.
 */
export async function defaultFileProblems(
  deps: { db: Db; config: Pick<Config, 'files'> },
  version: { contract: Contract; graph: WorkflowDocument },
  publisher: string,
): Promise<Problem[]> {
  const defaults: Record<string, unknown> = {};
  const nodeOf = new Map<string, number>(); // input key → its node's index
  for (const input of version.contract.inputs) {
    if (input.default === undefined) continue;
    defaults[input.key] = input.default;
    nodeOf.set(
      input.key,
      version.graph.nodes.findIndex((node) => node.id === input.node_id),
    );
  }
  const problems = await fileInputProblems(deps, version, defaults, {
    caller: publisher,
    workflowOwner: publisher,
  });
  // In node order, as the graph's own problems are.
  const index = (p: Problem) => nodeOf.get(p.field) ?? -1;
  return problems
    .sort((a, b) => index(a) - index(b))
    .map((p) => ({ ...p, field: `nodes[${index(p)}].default` }));
}
