/** Starting a run (spec "POST /api/v1/responses"): resolve, validate, check credit, record, start. */
import { isIP } from 'node:net';
import type { Db } from 'mongodb';
import type { Config } from '../../config';
import { INLINE_MAX_ROWS, MAX_ROWS, oversizedBatches } from '../../domain/run-size';
import type { WorkflowDocument } from '../../domain/graph';
import { validateInputs, type InputsResult } from '../../domain/inputs';
import { describeProblems } from '../../domain/problems';
import { callBudgets, runHold, unpricedModels, type HoldOptions } from '../../domain/run-hold';
import { isStoreUnreachable, type Collections } from '../../store/db';
import type { RunDoc } from '../../store/documents';
import { generateId } from '../../store/ids';
import { isDuplicateKey } from '../../store/ledger';
import { deleteRun, insertRun } from '../../store/runs';
import { newPayloadSecret } from '../../store/run-secrets';
import type { RunWrites } from '../../store/run-writes';
import type { RunArgs } from '../../workflows/definitions';
import { InvalidInputsError, InvalidRequestError } from '../../domain/errors';
import { RunStartUnsureError, type EndWait, type RunGateway } from '../temporal/run-gateway';
import type { AuthContext } from '../auth/auth-context';
import type { StartRequest } from '../contract/request-schemas';
import { runsStarted } from '../../lib/metrics';
import { classifyAddress, describeAddressClass } from '../../lib/net/ssrf';
import type { CreditCheck } from '../limits/credit-check';
import type { KnownRuns } from './known-runs';
import { fileInputProblems } from '../files/file-inputs';
import { resolveVersion, type WorkflowLookup } from '../workflows/resolve-version';

export interface StartRunDeps {
  collections: Collections;
  /** Where the GridFS files live: file inputs are checked against their owner (D19). */
  db: Db;
  gateway: RunGateway;
  /** The per-process D17 credit gate: reserves each run's hold. */
  credits: CreditCheck;
  /** Workflows and versions (per-process cache: WorkflowCatalog; or the store itself, storeLookup). */
  catalog: WorkflowLookup;
  /** Runs this process has seen (the start records their owner, so reads of the live run need no store round trip). */
  knownRuns?: KnownRuns;
  /** The process's group commit of run records (store/run-writes.ts); without it each start writes alone. */
  runWrites?: RunWrites;
  config: Pick<Config, 'runs' | 'files' | 'prices' | 'credits'> & Partial<Pick<Config, 'webhooks'>>;
}

/** D38: the run a start re-runs, and which of its items. */
export interface RerunOf {
  parentRunId: string;
  items: 'failed' | 'all';
  /** The run whose record holds the inputs (the parent's own `inputs_from`, or the parent): referenced, not copied. */
  inputsFrom?: string;
}

/** The run id was recorded by another request already (an idempotent start finishing a stalled one's work, D18). */
export class RunIdTakenError extends Error {
  constructor(readonly runId: string) {
    super(`run ${runId} exists already`);
  }
}

/** How a start is made: under a pre-allocated id (D18), as a re-run (D38), for a caller who waits for its end (D28). */
export interface StartOptions {
  runId?: string;
  rerun?: RerunOf;
  wait?: EndWait;
}

/**
 * Starts a run and returns its record as stored (status `pending`). `runId` is a pre-allocated
 * id (D18 idempotency); its record can be written once only, so two starts with one id start one run.
 * The steps: admit the request, hold its worst case, record the run, start its workflow.
 */
export async function startRun(
  deps: StartRunDeps,
  auth: AuthContext,
  request: StartRequest,
  opts: StartOptions = {},
): Promise<RunDoc> {
  const { collections } = deps;
  const { workflow, version, graph, inputs } = await admitRequest(
    deps,
    auth,
    request,
    !!opts.rerun,
  );
  const runId = opts.runId ?? generateId('run');
  const hold = holdUsd(deps, graph, inputs, request);
  // D36: a max_cost run is bounded by its cap alone, so its whole hold must be available.
  await deps.credits.reserve(auth.accountId, runId, hold, request.max_cost !== undefined);
  const run = newRunRecord({
    runId,
    auth,
    request,
    workflow,
    version,
    inputs,
    hold,
    rerun: opts.rerun,
  });
  const args = runArgs(
    run,
    graph,
    deps.config.runs,
    { prices: deps.config.prices, perCallUsd: deps.config.credits.holdPerCallUsd },
    inputs,
  );
  // The record comes first so the run is readable the moment its id is returned. From here on the
  // hold is given back by the run's end (store/run-end.ts, which reads it from the record), or
  // below when the run surely never starts; when that is unsure (a write whose outcome is
  // unknown, a start Temporal did not answer) it stays held, the safe side.
  try {
    // Group-committed with concurrent starts; resolves only once this record is stored.
    await (deps.runWrites ? deps.runWrites.insertRun(run) : insertRun(collections, run));
  } catch (err) {
    // The store went away with the write in flight: the record may be there. Keep hold and key
    // (a retry with the key finds the record, or records it), as for a start Temporal did not
    // answer; before, the key was released and a retry started a second run.
    if (isStoreUnreachable(err))
      throw new RunStartUnsureError(run._id, 'the database did not answer while it was recorded');
    if (!isDuplicateKey(err)) throw err;
    await releaseHold(deps, run, 'its run id was taken by another request');
    throw new RunIdTakenError(run._id);
  }
  // This process seals the start with it: no store read for a secret it just made.
  deps.gateway.codec?.runSecrets?.remember(run._id, Buffer.from(run.payload_secret!, 'base64'));
  try {
    await deps.gateway.start(args, workflow.slug, run.priority, opts.wait);
  } catch (err) {
    // The workflow may be running: the record stays, and gives the hold back at the run's end.
    if (err instanceof RunStartUnsureError) throw err;
    // Removed, the record can no longer give the hold back: this request does.
    if (await deleteRun(collections, run._id).catch(() => false))
      await releaseHold(deps, run, 'the run could not be started');
    throw err;
  }
  deps.knownRuns?.remember(run);
  // Counted here, not in the route, so an idempotent replay (D18) is not a second start.
  runsStarted.inc({ mode: request.stream ? 'stream' : 'async' });
  return run;
}

type Resolved = Awaited<ReturnType<typeof resolveVersion>>;

/**
 * Step 1, before anything is held or written: the webhook (D20), the version (D24), the inputs
 * (D4, file ids the caller's own: D19, all problems in one 400), the run's size (D31) and its
 * controls (D36).
 */
async function admitRequest(
  deps: StartRunDeps,
  auth: AuthContext,
  request: StartRequest,
  rerun: boolean,
): Promise<Resolved & { graph: WorkflowDocument; inputs: Record<string, unknown> }> {
  checkWebhook(request.webhook, {
    allowHttp: deps.config.webhooks?.allowHttp ?? false,
    allowPrivateNetwork: deps.config.webhooks?.allowPrivateNetwork ?? false,
  });
  const { workflow, version } = await resolveVersion(
    deps.catalog,
    auth.accountId,
    request.workflowId,
    request.version,
  );
  if (!version.graph || !version.contract) {
    throw new InvalidRequestError(
      `Version ${version.version} of \`${workflow.slug}\` cannot run: its graph is damaged.`,
      { code: 'workflow_graph_corrupt' },
    );
  }
  // D38: a re-run's inputs are its parent's, checked against this same version when it started
  // (~0.2 s for 100,000 rows): taken as they are.
  const inputs: InputsResult = rerun
    ? { ok: true, values: (request.inputs ?? {}) as Record<string, unknown> }
    : validateInputs(version.contract, request.inputs);
  // D19: file ids must be the caller's own; reported with the other D4 problems in one 400.
  const fileProblems = await fileInputProblems(deps, version, request.inputs, {
    caller: auth.accountId,
    workflowOwner: workflow.account_id,
  });
  const problems = [...(inputs.ok ? [] : inputs.problems), ...fileProblems];
  if (!inputs.ok || problems.length > 0)
    throw new InvalidInputsError(describeProblems(problems), problems);
  checkRunSize(version.graph, inputs.values);
  checkRunControls(request, deps.config.runs);
  checkModelsOffered(version.graph, deps.config);
  return { workflow, version, graph: version.graph, inputs: inputs.values };
}

/**
 * D17: with UNPRICED_MODELS=refuse a model PRICES does not list is not run (it would cost the
 * operator's provider account and bill the tenant nothing); checked at each start, as prices change.
 */
function checkModelsOffered(
  graph: WorkflowDocument,
  config: Pick<StartRunDeps['config'], 'prices' | 'credits'>,
): void {
  if (config.credits.unpricedModels !== 'refuse') return;
  const unpriced = unpricedModels(graph, config.prices);
  if (unpriced.length === 0) return;
  const named =
    unpriced
      .slice(0, 5)
      .map(({ node, model }) => `\`${model}\` (node \`${node}\`)`)
      .join(', ') + (unpriced.length > 5 ? ` and ${unpriced.length - 5} more` : '');
  throw new InvalidRequestError(
    `This service does not offer ${unpriced.length === 1 ? 'the model' : 'the models'} ${named}: it runs only the models it has a price for.`,
    { code: 'model_not_offered' },
  );
}

/** Step 2, D17: the run's worst case is held before it exists; 402 when the account has nothing available. */
function holdUsd(
  deps: StartRunDeps,
  graph: WorkflowDocument,
  inputs: Record<string, unknown>,
  request: StartRequest,
): number {
  const worst = runHold(graph, inputs, {
    prices: deps.config.prices,
    startFeeUsd: deps.config.runs.startFeeUsd,
    perCallUsd: deps.config.credits.holdPerCallUsd,
  });
  // D36: a run with max_cost cannot cost more, so its cap is a true bound: the hold is the cap,
  // or the exact worst case when that is less.
  return request.max_cost === undefined
    ? worst.usd
    : worst.exact
      ? Math.min(worst.usd, request.max_cost)
      : request.max_cost;
}

/** Step 3: the run's record as it is first stored (`pending`). */
function newRunRecord(args: {
  runId: string;
  auth: AuthContext;
  request: StartRequest;
  workflow: Resolved['workflow'];
  version: Resolved['version'];
  inputs: Record<string, unknown>;
  hold: number;
  rerun?: RerunOf;
}): RunDoc {
  const { runId, auth, request, workflow, version, inputs, hold, rerun } = args;
  return {
    _id: runId,
    account_id: auth.accountId,
    key_id: auth.keyId,
    published_workflow_id: workflow._id,
    published_workflow_version_id: version._id,
    version: version.version,
    status: 'pending',
    // D38: a re-run references the record that holds its inputs instead of writing them again.
    inputs: rerun?.inputsFrom ? {} : inputs,
    ...(rerun?.inputsFrom ? { inputs_from: rerun.inputsFrom } : {}),
    created_at: new Date(),
    completed_at: null,
    output: null,
    error: null,
    total_cost: null,
    events: null,
    finalized: false,
    webhook: request.webhook ?? null,
    ...(hold > 0 ? { hold_usd: hold } : {}),
    // D37: kept on the record only, never in the workflow's arguments: reads and webhooks render it from here.
    ...(request.metadata ? { metadata: request.metadata } : {}),
    ...(request.max_cost !== undefined ? { max_cost: request.max_cost } : {}),
    ...(request.timeout_seconds !== undefined ? { timeout_seconds: request.timeout_seconds } : {}),
    // D36: kept for a start retried from the record (idempotent-start.ts); normal is the default, not stored.
    ...(request.priority && request.priority !== 'normal' ? { priority: request.priority } : {}),
    // D39: the run's Temporal payloads are sealed under a key derived from this; deleting the record destroys it.
    payload_secret: newPayloadSecret(),
    // D38: a re-run names its parent; of failed items only, the workflow carries the rest over.
    ...(rerun ? { parent_run_id: rerun.parentRunId } : {}),
    ...(rerun?.items === 'failed' ? { rerun_items: 'failed' as const } : {}),
  };
}

/** Gives back the hold of a run that will not start; a failure leaves it held (the safe side). */
async function releaseHold(deps: StartRunDeps, run: RunDoc, why: string): Promise<void> {
  await deps.credits
    .release(run.account_id, run._id, run.hold_usd ?? 0, why)
    .catch(() => undefined);
}

/**
 * The workflow arguments of a recorded run (also used to start the workflow of a run recorded by a
 * request that then died). `inputs`: the run's inputs when its record references them (D38 `inputs_from`).
 */
export function runArgs(
  run: RunDoc,
  graph: WorkflowDocument,
  options: StartRunDeps['config']['runs'],
  pricing: Pick<HoldOptions, 'prices' | 'perCallUsd'>,
  inputs: Record<string, unknown> = run.inputs,
): RunArgs {
  return {
    runId: run._id,
    accountId: run.account_id,
    publishedWorkflowId: run.published_workflow_id,
    versionId: run.published_workflow_version_id,
    version: run.version,
    createdAtMs: run.created_at.getTime(),
    graph,
    inputs,
    // A workflow's own concurrency, within the operator's cap.
    options: {
      ...options,
      concurrency: Math.min(
        graph.concurrency ?? options.concurrency,
        options.maxConcurrency ?? Number.MAX_SAFE_INTEGER,
      ),
      // D36: only runs given these controls carry them, so other runs' arguments are as before.
      ...(run.timeout_seconds !== undefined
        ? { runTimeoutMs: run.timeout_seconds * 1000, timeoutSeconds: run.timeout_seconds }
        : {}),
      ...runCaps(
        run.max_cost,
        callBudgets(graph, { ...pricing, startFeeUsd: options.startFeeUsd }),
      ),
    },
    ...(run.webhook ? { webhook: run.webhook } : {}),
    holdUsd: run.hold_usd ?? 0, // D17: the record's hold, so finalize need not read it back
    // D38: only a re-run of failed items carries its parent's items over.
    ...(run.parent_run_id && run.rerun_items === 'failed'
      ? { rerun: { parentRunId: run.parent_run_id } }
      : {}),
  };
}

/**
 * D36: a run with `max_cost` is capped at it; D17: a run without one that makes priced calls is
 * capped at its hold, which grows from the account's credit as it works. Other runs carry neither,
 * so their arguments are as before.
 */
function runCaps(
  maxCost: number | undefined,
  perCallUsd: Record<string, number>,
): Pick<RunArgs['options'], 'costCap' | 'creditCap'> {
  if (maxCost !== undefined) return { costCap: { maxUsd: maxCost, perCallUsd } };
  return Object.keys(perCallUsd).length > 0 ? { creditCap: { perCallUsd } } : {};
}

/**
 * D36: `timeout_seconds` within the operator's maximum run duration, and a `max_cost` that pays
 * at least the start fee (a run that could not even start within its cap is a mistake, refused).
 */
function checkRunControls(
  request: StartRequest,
  runs: Pick<StartRunDeps['config']['runs'], 'runTimeoutMs' | 'startFeeUsd'>,
): void {
  const maxSeconds = Math.floor(runs.runTimeoutMs / 1000);
  if (request.timeout_seconds !== undefined && request.timeout_seconds > maxSeconds)
    throw invalidControl(
      'timeout_seconds',
      `must be at most ${maxSeconds} (the longest a run may take here)`,
    );
  if (request.max_cost !== undefined && request.max_cost < runs.startFeeUsd)
    throw invalidControl('max_cost', `must be at least the start fee of $${runs.startFeeUsd}`);
}

function invalidControl(param: string, problem: string): InvalidRequestError {
  return new InvalidRequestError(`\`${param}\` ${problem}.`, {
    param,
    details: [{ field: param, problem }],
  });
}

/** D31: a list that clearly exceeds the row limit is refused before the run is billed. */
function checkRunSize(graph: WorkflowDocument, inputs: Record<string, unknown>): void {
  const over = oversizedBatches(graph, inputs);
  if (over.length === 0) return;
  const details = over.map(({ nodeId, rows }) => ({
    field: `nodes.${nodeId}`,
    problem: `has ${rows} rows; a run takes at most ${INLINE_MAX_ROWS} per list in the request`,
  }));
  throw new InvalidRequestError(
    `The run is too large: node \`${over[0].nodeId}\` has ${over[0].rows} rows, and a run takes at most ${INLINE_MAX_ROWS} rows per list in the request (D31). Upload them as a file (POST /api/v1/files) and give its id: a file holds up to ${MAX_ROWS} rows.`,
    {
      code: 'run_too_large',
      param: 'inputs',
      details,
    },
  );
}

/**
 * D20: webhooks are https only, unless configuration allows http (tests, development), and a
 * host that is a literal non-public IP address (127.0.0.1, 10.0.0.5, [::1], 169.254.169.254 ...)
 * is refused now, by the delivery guard's own rules (lib/net/ssrf.ts) and under the same switch
 * (WEBHOOK_ALLOW_PRIVATE_NETWORK), instead of being accepted and dropped at delivery. A host
 * name is resolved only at delivery, where the guard checks every address it resolves to.
 */
function checkWebhook(
  webhook: string | undefined,
  settings: { allowHttp: boolean; allowPrivateNetwork: boolean },
): void {
  if (webhook === undefined) return;
  const url = new URL(webhook);
  if (!settings.allowHttp && url.protocol !== 'https:')
    throw invalidWebhook('must be an https:// URL');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!settings.allowPrivateNetwork && isIP(host)) {
    const cls = classifyAddress(host);
    if (cls !== 'public')
      throw invalidWebhook(`must reach a public address: ${host} is ${describeAddressClass(cls)}`);
  }
}

function invalidWebhook(problem: string): InvalidRequestError {
  return new InvalidRequestError(`\`webhook\` ${problem}.`, {
    code: 'invalid_webhook',
    param: 'webhook',
    details: [{ field: 'webhook', problem }],
  });
}
