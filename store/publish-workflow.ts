/** D26: publishing a workflow graph for an account: validate the whole graph, then store it as the next version. */
import { validateGraph, describeGraphProblems } from '../domain/validate-graph';
import type { Contract } from '../domain/contract';
import type { WorkflowDocument } from '../domain/graph';
import type { Problem } from '../domain/problems';
import type { Collections } from './db';
import { insertWorkflowVersion, versionBytes } from './workflows';
import { InvalidRequestError } from '../domain/errors';
import type { WorkflowDoc, WorkflowVersionDoc } from './documents';

export interface PublishResult {
  workflow_id: string;
  version_id: string;
  version: number;
  slug: string;
  inputs: Contract['inputs'];
  outputs: Contract['outputs'];
}

export interface PublishOptions {
  /** Asked with the valid graph before anything is stored: problems the graph alone cannot show (the API's file defaults). */
  check?: (version: { graph: WorkflowDocument; contract: Contract }) => Promise<Problem[]>;
  /** Asked with the bytes the version will hold before anything is stored; throws to refuse (the API's quota). */
  admit?: (bytes: number) => Promise<void>;
  /** Told at once (the API's workflow catalog and quota), so this process's next start runs the new version (D1). */
  onPublished?: (workflow: WorkflowDoc, version: WorkflowVersionDoc, bytes: number) => void;
  /** Told of the slug's workflow whose delete, cut short, this publish finished (its bytes left the quota). */
  onDeleted?: (workflow: WorkflowDoc) => void;
}

/** Validates the whole graph (every problem reported) and stores it as the next immutable version. */
export async function publishWorkflow(
  collections: Collections,
  accountId: string,
  document: unknown,
  opts: PublishOptions = {},
): Promise<PublishResult> {
  const result = validateGraph(document);
  if (!result.ok) throw invalidWorkflow(result.problems);
  const problems = (await opts.check?.(result)) ?? [];
  if (problems.length > 0) throw invalidWorkflow(problems);
  const bytes = versionBytes(result.graph, result.contract);
  await opts.admit?.(bytes);
  const { workflow, version, finished } = await insertWorkflowVersion(
    collections,
    accountId,
    result.graph,
    result.contract,
    bytes,
  );
  if (finished) opts.onDeleted?.(finished);
  opts.onPublished?.(workflow, version, bytes);
  return {
    workflow_id: workflow._id,
    version_id: version._id,
    version: version.version,
    slug: workflow.slug,
    inputs: result.contract.inputs,
    outputs: result.contract.outputs,
  };
}

/** D4: a graph that cannot be published, every problem named. */
function invalidWorkflow(problems: Problem[]): InvalidRequestError {
  return new InvalidRequestError(describeGraphProblems(problems), {
    code: 'invalid_workflow',
    param: problems[0]?.field,
    details: problems,
  });
}
