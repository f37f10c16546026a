/**
 * Waiting out a store blip: a read tried again while it fails, for a bounded time. The worker's
 * codec uses it for the key ring and run secrets it has never read (lib/codec/data-converter.ts).
 */

/** The first wait; each next one doubles, up to MAX_WAIT_MS. */
const FIRST_WAIT_MS = 100;
const MAX_WAIT_MS = 2_000;

/** After a read that failed: calls `read` again after growing pauses until it resolves, for at most about `forMs`; past that, its last error. */
export async function retryingFor<T>(forMs: number, read: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + forMs;
  let wait = FIRST_WAIT_MS;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, wait));
    try {
      return await read();
    } catch (err) {
      wait = Math.min(wait * 2, MAX_WAIT_MS);
      if (Date.now() + wait > deadline) throw err;
    }
  }
}
