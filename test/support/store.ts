/** A fresh MongoDB database on the shared test stack, for tests of store and activity code without an API or worker. */
import { connectStore, type Store } from '../../store/db';
import { testStack } from './stack';

let counter = 0;

/** Connects to a new, empty database (its collections and indexes created); close it when done. */
export async function connectTestStore(): Promise<Store> {
  const { stack } = await testStack();
  return connectStore({
    uri: stack.mongo.uri,
    dbName: `wrs_unit_${process.pid}_${++counter}_${Date.now()}`,
  });
}
