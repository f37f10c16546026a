/**
 * The bytes one list page holds (D23, D30). `limit` counts entries, not bytes: a run keeps up to
 * 512 KB of items in its record (D31) and a contract of 500 inputs with long descriptions is ~2
 * MB, so a page of 100 was 51 MB of runs or 80 MB of workflows, built on the API's one thread (ten
 * such pages at once stalled every account's answers for most of a minute). A page cut short says
 * `has_more`, and the next starts after its last entry.
 */

/** The most bytes of entries one list page holds (at least one entry is shown). */
export const LIST_PAGE_BYTES = 1 << 20;

/** How many of `entries`, from the first, fit in LIST_PAGE_BYTES by `size`; at least one. */
export function entriesWithinPage<T>(entries: readonly T[], size: (entry: T) => number): number {
  let bytes = 0;
  for (let i = 0; i < entries.length; i++) {
    bytes += size(entries[i]);
    if (bytes > LIST_PAGE_BYTES && i > 0) return i;
  }
  return entries.length;
}
