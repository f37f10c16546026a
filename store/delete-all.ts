/**
 * deleteMany in slices: FerretDB 1.x deletes with one SQL `IN (...)` of every matching id, and
 * SQLite refuses more than 32,766 variables ("too many SQL variables"), which a big run's
 * documents or an account's runs can exceed. Each slice is a `find` of ids and a delete by `_id`.
 */
import type { Collection, Document, Filter } from 'mongodb';

const SLICE = 10_000;

/** Deletes every document matching `filter`, SLICE at a time; returns how many were deleted. */
export async function deleteAll<T extends Document>(
  collection: Collection<T>,
  filter: Filter<T>,
): Promise<number> {
  let deleted = 0;
  for (;;) {
    const ids = await collection
      .find(filter, { projection: { _id: 1 }, limit: SLICE })
      .map((doc) => doc._id)
      .toArray();
    if (ids.length === 0) return deleted;
    const res = await collection.deleteMany({ _id: { $in: ids } } as Filter<T>);
    deleted += res.deletedCount;
    if (res.deletedCount === 0) return deleted; // removed meanwhile by someone else: do not spin
  }
}

/** Deletes documents by their ids, SLICE at a time (the one filter FerretDB pushes down is `_id`). */
export async function deleteByIds<T extends Document>(
  collection: Collection<T>,
  ids: readonly unknown[],
): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < ids.length; i += SLICE) {
    const slice = ids.slice(i, i + SLICE);
    deleted += (await collection.deleteMany({ _id: { $in: slice } } as Filter<T>)).deletedCount;
  }
  return deleted;
}
