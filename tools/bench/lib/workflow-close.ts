/** Waiting for a benchmark's run to close within the benchmark's deadline; a run past it is terminated, so the next one starts clean. */
import type { WorkflowHandle } from '@temporalio/client';

/** `closed`, `timeout` (the run was terminated) or `failed: <why>`. */
export async function awaitClose(handle: WorkflowHandle, timeoutMs: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      handle.result(),
      new Promise(
        (_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs)),
      ),
    ]);
    return 'closed';
  } catch (err) {
    if ((err as Error).message !== 'timeout') return `failed: ${(err as Error).message}`;
    await handle.terminate('benchmark timeout').catch(() => undefined);
    return 'timeout';
  } finally {
    clearTimeout(timer);
  }
}
