import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';

const LEVELS: Record<string, LogLevel> = { debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', silent: 'ERROR' };

/** Installs the Temporal worker runtime once, logging at the service's level (the SDK default is chatty INFO). */
export function installWorkerRuntime(level: string): void {
  try {
    Runtime.install({ logger: new DefaultLogger(LEVELS[level] ?? 'INFO') });
  } catch {
    // already installed in this process (tests start several workers)
  }
}
