/**
 * D37: how a run's metadata is stored and searched. FerretDB 1.x refuses field names containing
 * `.` (a valid metadata key), and a key inside a path would read as a nested path on MongoDB, so
 * the pairs are stored as `<key>=<value>` strings in one array, `metadata_tags`, in the caller's
 * order. A key never contains `=`, so the first `=` splits a tag. A filter on one pair is an
 * equality on an array element, served by the multikey index `account_metadata` (store/db.ts).
 */

/** The stored tags of a run's metadata. */
export function metadataTags(metadata: Record<string, string>): string[] {
  return Object.entries(metadata).map(([key, value]) => `${key}=${value}`);
}

/** The metadata the stored tags hold (none stored: `{}`). */
export function metadataFromTags(
  tags: readonly string[] | null | undefined,
): Record<string, string> {
  return Object.fromEntries(
    (tags ?? []).map((tag) => {
      const at = tag.indexOf('=');
      return [tag.slice(0, at), tag.slice(at + 1)];
    }),
  );
}
