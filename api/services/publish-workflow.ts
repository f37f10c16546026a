/** D26: publishing a workflow graph for the caller's account. */
import { validateGraph, describeGraphProblems } from '../../domain/validate-graph';
import type { Contract } from '../../domain/contract';
import type { Collections } from '../../store/db';
import { publishWorkflow as storeVersion } from '../../store/workflows';
import { InvalidRequestError } from '../errors';
import type { WorkflowCatalog } from './workflow-catalog';

export interface PublishResult {
  workflow_id: string;
  version_id: string;
  version: number;
  slug: string;
  inputs: Contract['inputs'];
  outputs: Contract['outputs'];
}

/** Validates the whole graph (every problem reported) and stores it as the next immutable version. */
export async function publishWorkflow(
  collections: Collections,
  accountId: string,
  document: unknown,
  /** This process's catalog: told at once, so its next start runs the new version (D1). */
  catalog?: WorkflowCatalog,
): Promise<PublishResult> {
  const result = validateGraph(document);
  if (!result.ok) {
    throw new InvalidRequestError(describeGraphProblems(result.problems), {
      code: 'invalid_workflow',
      param: result.problems[0]?.field,
      details: result.problems,
    });
  }
  const { workflow, version } = await storeVersion(collections, accountId, result.graph, result.contract);
  catalog?.published(workflow, version);
  return {
    workflow_id: workflow._id,
    version_id: version._id,
    version: version.version,
    slug: workflow.slug,
    inputs: result.contract.inputs,
    outputs: result.contract.outputs,
  };
}
