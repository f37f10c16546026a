// Mocha root hook plugin (loaded with --require): before any file runs, whatever server or tool is
// missing from ~/.cache/wrs is built (`npm test` already did so in pretest; this covers `npx mocha
// some.test.ts` on a fresh machine), outside every test timeout. The shared stack is stopped once,
// after every file ran. A failed test prints the API error lines its services logged while it ran
// (test/support/server-faults.ts): the cause of a 500 it saw.
import type { Context } from 'mocha';
import { installTools } from '../../tools/stack/install';
import { faultsMark, faultsSince } from './server-faults';
import { stopTestStack } from './stack';

export async function mochaGlobalSetup(): Promise<void> {
  await installTools();
}

export async function mochaGlobalTeardown(): Promise<void> {
  await stopTestStack();
}

let mark = 0;

export const mochaHooks = {
  beforeEach(): void {
    mark = faultsMark();
  },
  afterEach(this: Context): void {
    const test = this.currentTest;
    if (test?.state !== 'failed') return;
    const faults = faultsSince(mark);
    if (faults.length === 0) return;
    process.stdout.write(
      `\n      API errors logged during "${test.title}":\n${faults.map((l) => `        ${l}\n`).join('')}`,
    );
  },
};
