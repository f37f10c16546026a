import { setFlagsFromString } from 'node:v8';
import { DefaultLogger, Runtime, type LogEntry, type LogLevel } from '@temporalio/worker';
import pino from 'pino';

const LEVELS: Record<string, LogLevel> = {
  debug: 'DEBUG',
  info: 'INFO',
  warn: 'WARN',
  error: 'ERROR',
  silent: 'ERROR',
};
const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Installs the Temporal worker runtime once, logging through pino as JSON lines at the service's
 * level, the SDK's native core included. The SDK's entries carry `workflowId` (the run id) and
 * the activity type, so every line of a run can be found by its run id; no key ever reaches a worker.
 */
export function installWorkerRuntime(level: string, sdkMetricsPort?: number): void {
  const write = sdkLogWriter(workerLog(level));
  try {
    const sdkLevel = LEVELS[level] ?? 'INFO';
    Runtime.install({
      logger: new DefaultLogger(sdkLevel, write),
      // The SDK's native core (connection retries while Temporal is down) would otherwise
      // print its own text lines to stderr at WARN whatever the level: forwarded, they are pino JSON too.
      telemetryOptions: {
        logging: { filter: { core: sdkLevel, other: 'ERROR' }, forward: {} },
        // The SDK's metrics (temporal_* : slots, poll and schedule-to-start latency, sticky cache) for Prometheus.
        // Prometheus conventions (seconds, unit and _total suffixes): deploy/prometheus/alerts.yml relies on these names.
        ...(sdkMetricsPort && {
          metrics: {
            prometheus: {
              bindAddress: `0.0.0.0:${sdkMetricsPort}`,
              countersTotalSuffix: true,
              unitSuffix: true,
              useSecondsForDurations: true,
            },
          },
        }),
      },
    });
  } catch {
    // already installed in this process (tests start several workers)
  }
}

/**
 * The worker's pino logger. Its `err` is written as loggedError made it: pino's default `err`
 * serializer would replace the failure's type with the object's constructor name, so every
 * "Activity failed" line said `"type":"Object"`.
 */
export function workerLog(level: string, destination?: pino.DestinationStream): pino.Logger {
  return pino(
    {
      name: 'wrs-worker',
      level: level === 'silent' ? 'silent' : level,
      serializers: { err: (err: unknown) => err },
    },
    destination,
  );
}

/** Writes each entry of the SDK's logger as a line of `log`, its failure as `err` (loggedError). */
export function sdkLogWriter(log: pino.Logger): (entry: LogEntry) => void {
  return (entry) => {
    const { error, ...meta } = entry.meta ?? {};
    log[PINO_LEVEL[entry.level]](
      { ...meta, run_id: meta.workflowId, ...(error !== undefined && { err: loggedError(error) }) },
      entry.message,
    );
  };
}

/** Logs the configuration's warnings (Config.warnings: settings that have no effect), one line each. */
export function logConfigurationWarnings(warnings: string[]): void {
  for (const warning of warnings) Runtime.instance().logger.warn(warning);
}

/** Logs each failure of something the worker's start waits out (its store, Temporal), through the runtime's logger. */
export function warnWhileWaiting(message: string): (err: unknown) => void {
  return (err) =>
    Runtime.instance().logger.warn(message, { error: String((err as Error)?.message ?? err) });
}

/**
 * Bounds how far V8 lets the worker's heap grow between full collections, as a factor over what
 * was live after the last one (WORKER_HEAP_GROWING_PERCENT). Left to V8 (a factor up to 4 on a
 * machine with memory to spare), a worker running a 100,000-row batch at c=64 collected its old
 * space only when it held ~3× its ~100 MB live set, almost all of it the garbage of finished
 * provider calls, and peaked at 536–773 MB RSS; the memory was never in use. V8 reads the factor
 * at every full collection, so it is set at start, before any work; unlike a heap cap
 * (--max-old-space-size) it never makes the process fail when the live set grows.
 */
export function tuneWorkerHeap(growingPercent: number): void {
  if (growingPercent > 0) setFlagsFromString(`--heap-growing-percent=${growingPercent}`);
}

/**
 * The SDK's `error` of an entry ("Activity failed"), as pino shows an `err`: its type, message and
 * stack, bounded. Under `error` pino wrote an ApplicationFailure as its own fields without the
 * message, and a plain Error as `{}`: the line never said why.
 */
export function loggedError(error: unknown): { type: string; message: string; stack?: string } {
  // By shape, not instanceof: an error made in the workflow sandbox is of another realm's Error.
  const e = (typeof error === 'object' && error) || {};
  const { type, name, message, stack } = e as Record<string, unknown>;
  if (typeof message !== 'string')
    return { type: typeof error, message: String(error).slice(0, 1_000) };
  return {
    type: typeof type === 'string' && type ? type : typeof name === 'string' ? name : 'Error',
    message: message.slice(0, 1_000),
    ...(typeof stack === 'string' && { stack: stack.slice(0, 2_000) }),
  };
}
