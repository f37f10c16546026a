/**
 * Finding the workflow (D2: by id or slug) and the version (D1: the newest, or a pinned number or
 * id) a request names, with the 404 that says which of the two is missing. Used by starts and by
 * the contract endpoint (GET /api/v1/workflows/{id}).
 */
import type { Collections } from '../../store/db';
import type { WorkflowDoc, WorkflowVersionDoc } from '../../store/documents';
import { findVersion, findWorkflow } from '../../store/workflows';
import { NotFoundError } from '../../domain/errors';

/** Where a start finds workflows (D2) and versions (D1). */
export interface WorkflowLookup {
  findWorkflow(accountId: string, ref: string): Promise<WorkflowDoc | null>;
  findVersion(workflowId: string, pin?: number | string): Promise<WorkflowVersionDoc | null>;
}

/** The store itself as a WorkflowLookup, nothing remembered (tools and baselines). */
export function storeLookup(
  collections: Pick<Collections, 'workflows' | 'workflowVersions' | 'workflowVersionNumbers'>,
): WorkflowLookup {
  return {
    findWorkflow: (accountId, ref) => findWorkflow(collections, accountId, ref),
    findVersion: (workflowId, pin) => findVersion(collections, workflowId, pin),
  };
}

/** Resolves the workflow (D2) and version (D1), or throws the matching 404. */
export async function resolveVersion(
  lookup: WorkflowLookup,
  accountId: string,
  ref: string,
  pin: number | string | undefined,
): Promise<{ workflow: WorkflowDoc; version: WorkflowVersionDoc }> {
  const workflow = await lookup.findWorkflow(accountId, ref);
  if (!workflow) throw workflowNotFound(ref);
  const version = await lookup.findVersion(workflow._id, pin);
  // D2: another account reads and runs only the versions published public. The workflow's own
  // flag is its latest publish's, so it alone opened every version published while private (and
  // the private files those name as defaults) once a later one was public.
  if (!version || (workflow.account_id !== accountId && version.graph.public !== true)) {
    const which =
      pin === undefined
        ? 'has no published version'
        : `has no version \`${String(pin).slice(0, 64)}\``;
    throw new NotFoundError(
      `Workflow \`${ref.slice(0, 256)}\` ${which}.`,
      'published_workflow_version_not_found',
    );
  }
  return { workflow, version };
}

/** D2's 404 for a reference that names no workflow of the caller's. */
export function workflowNotFound(ref: string): NotFoundError {
  // A path segment can be ~16 KB (GET /workflows/{id}): never echo more of it than an id could be.
  return new NotFoundError(
    `No published workflow \`${ref.slice(0, 256)}\` in this account.`,
    'published_workflow_not_found',
  );
}
