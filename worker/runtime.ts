import { DefaultLogger, Runtime, type LogEntry, type LogLevel } from '@temporalio/worker';
import pino from 'pino';

const LEVELS: Record<string, LogLevel> = { debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', silent: 'ERROR' };
const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Installs the Temporal worker runtime once, logging through pino as JSON lines at the service's
 * level. The SDK's entries carry `workflowId` (the run id) and the activity type, so every line
 * of a run can be found by its run id; no key ever reaches a worker.
 */
export function installWorkerRuntime(level: string): void {
  const log = pino({ name: 'wrs-worker', level: level === 'silent' ? 'silent' : level });
  const write = (entry: LogEntry) => log[PINO_LEVEL[entry.level]]({ ...entry.meta, run_id: entry.meta?.workflowId }, entry.message);
  try {
    Runtime.install({ logger: new DefaultLogger(LEVELS[level] ?? 'INFO', write) });
  } catch {
    // already installed in this process (tests start several workers)
  }
}
