/**
 * What a failed Temporal call means to the API, in one place: the gRPC status behind an error of
 * @temporalio/client (bare or wrapped in its ServiceError), the questions callers ask of it, and
 * the tries a call gets when Temporal misses its own namespace.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isGrpcServiceError, NamespaceNotFoundError, ServiceError } from '@temporalio/client';

/** gRPC status UNAVAILABLE: the server cannot be reached (refused, reset, not resolvable). */
export const UNAVAILABLE = 14;
/** gRPC status DEADLINE_EXCEEDED: no answer in time (the call may or may not have taken effect). */
export const DEADLINE_EXCEEDED = 4;

/** The gRPC status behind a failed Temporal call (bare or wrapped), or undefined for any other error. */
function grpcStatus(err: unknown) {
  if (isGrpcServiceError(err)) return err;
  return err instanceof ServiceError && isGrpcServiceError(err.cause) ? err.cause : undefined;
}

/** The gRPC status code of a failed Temporal call, or undefined for any other error. */
export function grpcCode(err: unknown): number | undefined {
  return grpcStatus(err)?.code;
}

const FAILED_PRECONDITION = 9;
const INVALID_ARGUMENT = 3;

/**
 * True when Temporal refused a call for the size of what it carries ("Blob data size exceeds
 * limit", past its 2 MB of a payload): the same call is refused again, so the caller's request is
 * at fault, not the service.
 */
export function isPayloadTooLarge(err: unknown): boolean {
  const status = grpcStatus(err);
  return (
    status?.code === INVALID_ARGUMENT &&
    /size exceeds limit/i.test(`${status.details ?? ''} ${status.message ?? ''}`)
  );
}

/**
 * True when Temporal refused a query because no worker polls the run's task queue ("no poller
 * seen for task queue recently, worker may be down"): a worker will, later.
 */
export function isNoWorker(err: unknown): boolean {
  const status = grpcStatus(err);
  return status?.code === FAILED_PRECONDITION && /no poller seen/i.test(status.details ?? '');
}

// grpc-js refuses a call on a closed channel (a Connection closed, as during a shutdown) with a
// bare Error of this message and no gRPC status; the Temporal client wraps it in a ServiceError.
const CHANNEL_CLOSED = 'Channel has been shut down';

/** True when the call never left: its Temporal connection is closed. */
export function isChannelClosed(err: unknown): boolean {
  const inner = err instanceof ServiceError ? err.cause : err;
  return inner instanceof Error && inner.message === CHANNEL_CLOSED;
}

/**
 * A call made while the API's start still waits for Temporal (api/start-api.ts listens first): it
 * reaches nothing, as a call during an outage, and is answered the same way (503, Retry-After).
 */
export class TemporalNotConnectedError extends Error {
  constructor() {
    super('Temporal has not answered since this API process started');
    this.name = 'TemporalNotConnectedError';
  }
}

/**
 * True when a Temporal call failed because the server could not be reached (not because it was
 * slow or said no): UNAVAILABLE, a closed connection, which reaches nothing either, or none yet.
 */
export function isTemporalUnreachable(err: unknown): boolean {
  return (
    grpcCode(err) === UNAVAILABLE ||
    isChannelClosed(err) ||
    err instanceof TemporalNotConnectedError
  );
}

/**
 * True when Temporal could not be reached, did not answer in time, or did not find the namespace
 * the API checked at start-up (its search attributes are listed there): the request answers 503
 * (retry later).
 */
export function isTemporalUnavailable(err: unknown): boolean {
  return (
    isTemporalUnreachable(err) ||
    grpcCode(err) === DEADLINE_EXCEEDED ||
    err instanceof NamespaceNotFoundError
  );
}

/**
 * Waits between the tries of a call Temporal refused with "namespace not found" (see
 * `retryNamespaceMisses`): 1.75 s in all.
 */
export const NAMESPACE_RETRY_MS = [250, 500, 1_000];

/**
 * Runs `call`, again after each of `delaysMs` while Temporal answers that the namespace does not
 * exist. The namespace existed when the API started, and the development server's SQLite store
 * fails a namespace lookup now and then under load (seen in CI: a start answered
 * NamespaceNotFoundError between two that succeeded); the call was refused, so it did nothing and
 * may be sent again. Past the last try the error stands (503 through isTemporalUnavailable).
 */
export async function retryNamespaceMisses<T>(
  call: () => Promise<T>,
  delaysMs: readonly number[] = NAMESPACE_RETRY_MS,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof NamespaceNotFoundError) || attempt >= delaysMs.length) throw err;
      await sleep(delaysMs[attempt]);
    }
  }
}
