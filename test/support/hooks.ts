// Mocha root hook plugin (loaded with --require): the shared stack is stopped once, after every file ran.
import { stopTestStack } from './stack';

export async function mochaGlobalTeardown(): Promise<void> {
  await stopTestStack();
}
