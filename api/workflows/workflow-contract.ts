/** D24: a published workflow's contract, so a client can build a form for any workflow. */
import { inputsJsonSchema } from '../../domain/contract';
import type { WorkflowDoc, WorkflowVersionDoc } from '../../store/documents';
import { resolveVersion, type WorkflowLookup } from './resolve-version';

/** The latest (or pinned) version's inputs, with a JSON Schema of `inputs`, and outputs. */
export async function workflowContract(
  catalog: WorkflowLookup,
  accountId: string,
  ref: string,
  version?: number | string,
) {
  const { workflow, version: v } = await resolveVersion(catalog, accountId, ref, version);
  return contractView(workflow, v);
}

/** One version's contract as D24 answers it (D30 lists the latest of each workflow in this shape). */
export function contractView(
  workflow: WorkflowDoc,
  v: Pick<WorkflowVersionDoc, '_id' | 'version' | 'created_at' | 'contract'>,
) {
  return {
    workflow_id: workflow._id,
    slug: workflow.slug,
    name: workflow.name,
    version: v.version,
    version_id: v._id,
    created_at: v.created_at.toISOString(),
    inputs: v.contract.inputs,
    outputs: v.contract.outputs,
    inputs_schema: inputsJsonSchema(v.contract),
  };
}
export type WorkflowContractView = ReturnType<typeof contractView>;
