// Mocha root hook plugin (loaded with --require): before any file runs, whatever server or tool is
// missing from ~/.cache/wrs is built (`npm test` already did so in pretest; this covers `npx mocha
// some.test.ts` on a fresh machine), outside every test timeout. The shared stack is stopped once,
// after every file ran.
import { installTools } from '../../tools/stack/install';
import { stopTestStack } from './stack';

export async function mochaGlobalSetup(): Promise<void> {
  await installTools();
}

export async function mochaGlobalTeardown(): Promise<void> {
  await stopTestStack();
}
