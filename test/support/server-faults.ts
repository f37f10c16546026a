/**
 * The API's error lines of every test service (level `error`: a request answered 5xx, an unhandled
 * rejection), kept in memory so that a failed test shows the faults logged while it ran (the root
 * hooks in test/support/hooks.ts print them). Test services otherwise log nothing: a 500 seen by a
 * test under CI load would leave no trace of its cause.
 */
import type { DestinationStream } from 'pino';

/** The newest lines kept (a test provoking faults on purpose must not grow the buffer without end). */
const KEPT = 200;

const lines: Array<{ seq: number; line: string }> = [];
let written = 0;

/** Where a test service's logger writes (pino calls `write` with each line, synchronously). */
export const serverFaults: DestinationStream = {
  write(line: string) {
    lines.push({ seq: written++, line: line.trimEnd() });
    if (lines.length > KEPT) lines.shift();
  },
};

/** A point in the stream of lines, for `faultsSince`. */
export function faultsMark(): number {
  return written;
}

/** The lines written since `mark` (those still kept). */
export function faultsSince(mark: number): string[] {
  return lines.filter((l) => l.seq >= mark).map((l) => l.line);
}
