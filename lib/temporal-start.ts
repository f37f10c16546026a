/**
 * Connecting to Temporal when a process starts (the API's client, the worker's native connection):
 * while no frontend answers, every configured one is tried again, 0.1 s doubling to 2 s apart, each
 * failed round told to `onWait`, for as long as that lasts. Exiting instead would have the
 * orchestrator restart the process with growing back-off (Kubernetes: up to 5 minutes), which then
 * outlasts the outage (docs/outages.md). What waiting cannot mend (a certificate file that is not
 * there) ends the start at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../config';
import { connectFirst, type TemporalConnectOptions } from '../config/temporal-connection';
import { retrying } from './retrying';

/** gRPC's UNAVAILABLE: the client's answer once a connection was refused or lost. */
const UNAVAILABLE = 14;

/** A connection attempt that found no server (refused, unreachable, no answer in time): worth waiting out. */
export function isTemporalUnreachable(err: unknown): boolean {
  const e = err as { name?: unknown; code?: unknown; message?: unknown } | undefined;
  return (
    // The worker's native connection (the SDK's core).
    e?.name === 'TransportError' ||
    // The client's connection: its first call found no server before the connect deadline.
    e?.code === UNAVAILABLE ||
    (typeof e?.message === 'string' &&
      e.message.startsWith('Failed to connect before the deadline'))
  );
}

/**
 * connectFirst, waiting while Temporal cannot be reached. `signal` ends the wait (the API shutting
 * down before Temporal answered): its pause is cut short, and a try under way when it fires ends the
 * wait once it settles.
 */
export function connectTemporalWhenReachable<T>(
  temporal: Config['temporal'],
  connect: (options: TemporalConnectOptions) => Promise<T>,
  onWait: (err: unknown) => void,
  signal?: AbortSignal,
): Promise<T> {
  return retrying(
    () => {
      signal?.throwIfAborted();
      return connectFirst(temporal, connect).catch((err: unknown) => {
        if (isTemporalUnreachable(err) && !signal?.aborted) onWait(err);
        throw err;
      });
    },
    {
      forMs: Infinity,
      retryable: isTemporalUnreachable,
      ...(signal && { pause: (ms: number) => sleep(ms, undefined, { signal }) }),
    },
  );
}
