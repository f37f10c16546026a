/**
 * Idempotent starts (D18): `Idempotency-Key` on POST /api/v1/responses. The same key and the
 * same body within 24 hours answer with the same run (and bill nothing again); the same key
 * with another body is 409 `idempotency_key_reused`.
 *
 * The first request inserts `<account>:<key>` with the request's hash and a run id allocated
 * up front; the unique `_id` makes exactly one of any number of concurrent requests the
 * claimant, which then starts the run under that id. Every other request reads the claim and
 * polls MongoDB (bounded, backing off) until the run's record exists, then answers with it.
 *
 * If the claimant dies (no multi-document transactions: every step stands alone):
 *  1. after claiming, before recording the run: the claim names a run that has no record. A
 *     repeat waits until the claim is STALE_MS old, then does the start itself under the same
 *     run id. The run record's unique `_id` lets only one request record it, and only the one
 *     that recorded it starts the workflow, so even a claimant that was merely slow and a
 *     repeat that took over start one run between them.
 *  2. after recording the run, before starting its workflow: the record stays `pending` with
 *     no workflow. A repeat finds the record; once the claim is STALE_MS old and Temporal knows
 *     no workflow of that id, it starts it from the record (the workflow id is the run id, so
 *     Temporal refuses a second start; nothing can run twice). Only while the record is younger
 *     than RESUMABLE_FOR_MS: later, a read may be ending it `failed` (settle-never-started.ts),
 *     so the repeat leaves it to that, or ends it so itself once it is old enough.
 *     Until the claim is stale a repeat waits (bounded by WAIT_MS) for the workflow to exist: it
 *     answers only with a run that started.
 *  3. after starting the workflow: nothing is left to do; repeats answer with the run.
 *  4. the start was refused (404, 400, 402, 503): startRun removes the record of a run whose
 *     workflow it could not start and the claim is released, so a corrected or later retry is
 *     judged afresh. A claimant that dies before releasing leaves case 1. A start Temporal took
 *     but never answered (RunStartUnsureError) keeps both record and claim: case 2 or 3.
 *  5. no repeat comes in time: the claim stays until it expires after 24 hours; in case 2 the
 *     `pending` record stays until a read (or a repeat) finds it 15 minutes old and ends it
 *     `failed`, billed nothing (settle-never-started.ts); a repeat then answers with that run.
 */
import type { Collections } from '../../store/db';
import type { IdempotencyKeyDoc, RunDoc } from '../../store/documents';
import {
  IDEMPOTENCY_TTL_MS,
  claimIdempotencyKey,
  findIdempotencyKey,
  idempotencyId,
  releaseIdempotencyKey,
  requestHash,
} from '../../store/idempotency';
import { generateId } from '../../store/ids';
import { findRunHead, runInputs } from '../../store/runs';
import { findVersionById, workflowSlug } from '../../store/workflows';
import { InvalidRequestError, ServiceUnavailableError } from '../../domain/errors';
import type { AuthContext } from '../auth/auth-context';
import { IDEMPOTENCY_KEY_PATTERN } from '../contract/http-schemas';
import type { StartRequest } from '../contract/request-schemas';
import {
  RunIdTakenError,
  runArgs,
  startRun,
  type StartOptions,
  type StartRunDeps,
} from './start-run';
import { RunStartUnsureError } from '../temporal/run-gateway';
import { endNeverStarted, neverStarted, resumable } from './settle-never-started';

/** How the claimed start is made (a re-run, a waited start); its run id is the claim's. */
type ClaimOptions = Omit<StartOptions, 'runId'>;

/** A claim this old whose run is still unrecorded (or whose workflow is missing) was abandoned by its request. */
export const STALE_MS = 10_000;
/** The longest a repeat waits for the first request's run before answering 503 (the caller may retry). */
export const WAIT_MS = 30_000;

export interface IdempotentStartDeps extends StartRunDeps {
  collections: Collections;
}

/** The validated `Idempotency-Key` header value, or undefined when the header is absent; 400 when malformed. */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(header)) {
    throw new InvalidRequestError(
      '`Idempotency-Key` must be 1 to 255 visible ASCII characters (no spaces or control characters).',
      {
        code: 'invalid_idempotency_key',
        param: 'Idempotency-Key',
      },
    );
  }
  return header;
}

/** Starts `request` at most once per account and key within 24 hours (D18) and returns the run's record. */
export async function startIdempotent(
  deps: IdempotentStartDeps,
  auth: AuthContext,
  request: StartRequest,
  key: string,
  opts: ClaimOptions = {},
): Promise<RunDoc> {
  const id = idempotencyId(auth.accountId, key);
  const hash = hashOf(request, opts);
  const deadline = Date.now() + WAIT_MS;
  const writes = deps.runWrites;
  for (;;) {
    const now = Date.now();
    const mine: IdempotencyKeyDoc = {
      _id: id,
      account_id: auth.accountId,
      key,
      request_hash: hash,
      run_id: generateId('run'),
      created_at: new Date(now),
      expires_at: new Date(now + IDEMPOTENCY_TTL_MS),
    };
    const claim = await claimIdempotencyKey(
      deps.collections,
      mine,
      writes && ((doc) => writes.insertClaim(doc)), // group-committed with other starts' claims
    );
    if (claim.request_hash !== hash) throw keyReused();
    const started =
      claim.run_id === mine.run_id ? await startClaimed(deps, auth, request, claim, opts) : null;
    const run = started ?? (await awaitRun(deps, auth, request, claim, deadline, opts));
    if (run) return run;
    // The claim was released (its request was refused before starting anything): claim afresh.
    if (Date.now() > deadline) throw stillStarting();
  }
}

/**
 * Whether `key` names a start of this very request already (a repeat, answered with that run
 * whatever has happened since); 409 `idempotency_key_reused` when it names another. A re-run asks
 * before it judges its parent, so a repeat is never refused for what the first one changed
 * (`nothing_to_rerun` once its re-run completed) and a reused key is always 409, as on a start.
 */
export async function keyNamesThis(
  deps: IdempotentStartDeps,
  auth: AuthContext,
  request: StartRequest,
  key: string,
  opts: ClaimOptions,
): Promise<boolean> {
  const claim = await findIdempotencyKey(deps.collections, idempotencyId(auth.accountId, key));
  if (!claim) return false;
  if (claim.request_hash !== hashOf(request, opts)) throw keyReused();
  return true;
}

/** D38: a re-run's key is bound to its parent and items too, so it never answers with another start. */
function hashOf(request: StartRequest, { rerun }: ClaimOptions): string {
  return requestHash(rerun ? { ...request, rerun } : request);
}

function keyReused(): InvalidRequestError {
  return new InvalidRequestError(
    'This Idempotency-Key was used with a different request body in the last 24 hours.',
    { code: 'idempotency_key_reused', param: 'Idempotency-Key' },
  );
}

/** Starts the claimed run; null when another request recorded that run id first. */
async function startClaimed(
  deps: IdempotentStartDeps,
  auth: AuthContext,
  request: StartRequest,
  claim: IdempotencyKeyDoc,
  opts: ClaimOptions,
): Promise<RunDoc | null> {
  try {
    return await startRun(deps, auth, request, { ...opts, runId: claim.run_id });
  } catch (err) {
    if (err instanceof RunIdTakenError) return null;
    // Perhaps started: the key keeps naming the run, so a retry answers with it (or starts it, case 2).
    if (err instanceof RunStartUnsureError) throw err;
    // Nothing was started: free the key, so a retry after a top-up or with a corrected body is judged afresh.
    await releaseIdempotencyKey(deps.collections, claim._id, claim.run_id).catch(() => undefined);
    throw err;
  }
}

/** Waits for the claimed run's record (condition-based, backing off); null when the claim went away meanwhile. */
async function awaitRun(
  deps: IdempotentStartDeps,
  auth: AuthContext,
  request: StartRequest,
  claim: IdempotencyKeyDoc,
  deadline: number,
  opts: ClaimOptions,
): Promise<RunDoc | null> {
  for (let delay = 10; ; delay = Math.min(delay * 2, 200)) {
    const run = await findRunHead(deps.collections, auth.accountId, claim.run_id, {
      deleting: true,
    });
    if (run?.deleting) {
      // D39: a DELETE of the run was cut short before its keys went: this one goes now, as it
      // would have, and the request is claimed afresh (before: retried the taken id for 24 h).
      await releaseIdempotencyKey(deps.collections, claim._id, claim.run_id);
      return null;
    }
    if (run) {
      const answer = await resumeAbandoned(deps, run, claim);
      if (answer) return answer;
    } else {
      const current = await findIdempotencyKey(deps.collections, claim._id);
      if (!current || current.run_id !== claim.run_id) return null;
      if (isStale(current)) {
        // Crash case 1: the claimant died before recording its run; finish its work under the same id.
        const taken = await startClaimed(deps, auth, request, current, opts);
        if (taken) return taken;
      }
    }
    if (Date.now() > deadline) throw stillStarting();
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

/**
 * Crash case 2: a recorded run whose claimant died before starting its workflow gets it started
 * now, or, past the time it may be, ends `failed` as a read would end it. Answers the run's
 * record; undefined while its claimant may still be starting it (the caller waits): a repeat sent
 * at once after a claimant that died between the two steps was answered with a run that never
 * started, `pending` until a read ended it `failed` 15 minutes on.
 */
async function resumeAbandoned(
  deps: IdempotentStartDeps,
  run: RunDoc,
  claim: IdempotencyKeyDoc,
): Promise<RunDoc | undefined> {
  if (run.finalized || run.status !== 'pending') return run;
  // Temporal unreachable: 503, and the caller's retry tries again.
  if (await deps.gateway.exists(run._id)) return run;
  if (!isStale(claim)) return undefined;
  if (!resumable(run)) {
    if (!neverStarted(run)) return run; // a read ends it once it is old enough
    return (await endNeverStarted(deps.collections, run)) ?? run;
  }
  const version = await findVersionById(deps.collections, run.published_workflow_version_id);
  if (!version?.graph) return run;
  // The head left the inputs out: read from the record that holds them, this run's or (D38) the
  // first ancestor's of a re-run; erased meanwhile (D39), the run cannot start.
  const inputs = await runInputs(deps.collections, {
    ...run,
    inputs_from: run.inputs_from ?? run._id,
  });
  if (!inputs) return run;
  const slug = await workflowSlug(deps.collections, run.published_workflow_id);
  await deps.gateway.start(
    runArgs(
      run,
      version.graph,
      deps.config.runs,
      { prices: deps.config.prices, perCallUsd: deps.config.credits.holdPerCallUsd },
      inputs,
    ),
    slug ?? run.published_workflow_id,
    run.priority,
  );
  return run;
}

function isStale(claim: IdempotencyKeyDoc): boolean {
  return Date.now() - claim.created_at.getTime() > STALE_MS;
}

function stillStarting(): ServiceUnavailableError {
  return new ServiceUnavailableError(
    'The first request with this Idempotency-Key is still starting its run. Retry shortly.',
  );
}
