/**
 * D16 counts requests in fixed one-minute windows of the wall clock: a test that counts up to a
 * limit must run inside one window, or its last request lands in a fresh one and goes through.
 */

/** Seconds left in the current one-minute window, as the server computes it. */
export const secondsLeft = (): number =>
  Math.max(1, Math.ceil((60_000 - (Date.now() % 60_000)) / 1000));

/** Waits for the next window when fewer than `seconds` remain in this one, so a test's requests share one window. */
export async function freshWindow(seconds = 20): Promise<void> {
  const leftMs = 60_000 - (Date.now() % 60_000);
  if (leftMs < seconds * 1000) await new Promise((r) => setTimeout(r, leftMs + 50));
}
