/**
 * What a failed Temporal call means to the API, in one place: the gRPC status behind an error of
 * @temporalio/client (bare or wrapped in its ServiceError), and the two questions callers ask.
 */
import { isGrpcServiceError, ServiceError } from '@temporalio/client';

/** gRPC status UNAVAILABLE: the server cannot be reached (refused, reset, not resolvable). */
export const UNAVAILABLE = 14;
/** gRPC status DEADLINE_EXCEEDED: no answer in time (the call may or may not have taken effect). */
export const DEADLINE_EXCEEDED = 4;

/** The gRPC status code of a failed Temporal call, or undefined for any other error. */
export function grpcCode(err: unknown): number | undefined {
  const grpc = isGrpcServiceError(err)
    ? err
    : err instanceof ServiceError && isGrpcServiceError(err.cause)
      ? err.cause
      : undefined;
  return grpc?.code;
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
 * True when a Temporal call failed because the server could not be reached (not because it was
 * slow or said no): UNAVAILABLE, or a closed connection, which reaches nothing either.
 */
export function isTemporalUnreachable(err: unknown): boolean {
  return grpcCode(err) === UNAVAILABLE || isChannelClosed(err);
}

/** True when Temporal could not be reached or did not answer in time: the request answers 503 (retry later). */
export function isTemporalUnavailable(err: unknown): boolean {
  return isTemporalUnreachable(err) || grpcCode(err) === DEADLINE_EXCEEDED;
}
