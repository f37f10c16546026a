/** Starting a run (spec "POST /api/v1/responses"): resolve, validate, check credit, record, start. */
import type { Config } from '../../config';
import { validateInputs, describeProblems } from '../../domain/inputs';
import type { Collections } from '../../store/db';
import type { RunDoc, WorkflowDoc, WorkflowVersionDoc } from '../../store/documents';
import { generateId } from '../../store/ids';
import { deleteRun, insertRun } from '../../store/runs';
import { findVersion, findWorkflow } from '../../store/workflows';
import type { RunArgs } from '../../workflows/definitions';
import { InsufficientCreditsError, InvalidInputsError, InvalidRequestError, NotFoundError } from '../errors';
import type { RunGateway } from '../run-gateway';
import type { AuthContext } from '../middleware/authenticate';
import type { StartRequest } from '../schemas';

export interface StartRunDeps {
  collections: Collections;
  gateway: RunGateway;
  config: Pick<Config, 'runs'>;
}

/** Resolves the workflow (D2) and version (D1), or throws the matching 404. */
export async function resolveVersion(
  collections: Collections,
  accountId: string,
  ref: string,
  pin: number | string | undefined,
): Promise<{ workflow: WorkflowDoc; version: WorkflowVersionDoc }> {
  const workflow = await findWorkflow(collections, accountId, ref);
  if (!workflow) throw new NotFoundError(`No published workflow \`${ref}\` in this account.`, 'published_workflow_not_found');
  const version = await findVersion(collections, workflow._id, pin);
  if (!version) {
    const which = pin === undefined ? 'has no published version' : `has no version \`${pin}\``;
    throw new NotFoundError(`Workflow \`${ref}\` ${which}.`, 'published_workflow_version_not_found');
  }
  return { workflow, version };
}

/** Starts a run and returns its record as stored (status `pending`). */
export async function startRun(deps: StartRunDeps, auth: AuthContext, request: StartRequest): Promise<RunDoc> {
  const { collections } = deps;
  const { workflow, version } = await resolveVersion(collections, auth.accountId, request.workflowId, request.version);
  if (!version.graph || !version.contract) {
    throw new InvalidRequestError(`Version ${version.version} of \`${workflow.slug}\` cannot run: its graph is damaged.`, {
      status: 422,
      code: 'workflow_graph_corrupt',
    });
  }
  const inputs = validateInputs(version.contract, request.inputs);
  if (!inputs.ok) throw new InvalidInputsError(describeProblems(inputs.problems), inputs.problems);

  const account = await collections.accounts.findOne({ _id: auth.accountId }, { projection: { balance_usd: 1 } });
  if (!account || account.balance_usd <= 0) throw new InsufficientCreditsError(); // D17

  const createdAt = new Date();
  const run: RunDoc = {
    _id: generateId('run'),
    account_id: auth.accountId,
    key_id: auth.keyId,
    published_workflow_id: workflow._id,
    published_workflow_version_id: version._id,
    version: version.version,
    status: 'pending',
    inputs: inputs.values,
    created_at: createdAt,
    completed_at: null,
    output: null,
    error: null,
    total_cost: null,
    events: null,
    finalized: false,
  };
  const args: RunArgs = {
    runId: run._id,
    accountId: auth.accountId,
    publishedWorkflowId: workflow._id,
    versionId: version._id,
    version: version.version,
    createdAtMs: createdAt.getTime(),
    graph: version.graph,
    inputs: inputs.values,
    options: deps.config.runs,
  };
  // The record comes first so the run is readable the moment its id is returned.
  await insertRun(collections, run);
  try {
    await deps.gateway.start(args);
  } catch (err) {
    await deleteRun(collections, run._id).catch(() => undefined);
    throw err;
  }
  return run;
}
