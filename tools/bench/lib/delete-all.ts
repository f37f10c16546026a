/**
 * deleteMany in slices: FerretDB 1.x deletes with one SQL `IN (...)` of every matching id, and
 * SQLite refuses more than 32,766 variables ("too many SQL variables"), which a control phase's
 * tens of thousands of records exceed.
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
  }
}
