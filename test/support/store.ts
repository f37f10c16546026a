/** A fresh MongoDB database on the shared test stack, for tests of store and activity code without an API or worker. */
import { generateId } from '../../store/ids';
import { connectStore, type Store } from '../../store/db';
import type { RunDoc } from '../../store/documents';
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

/**
 * A fresh database for the enclosing `describe`: connected before its tests, closed after them
 * (mocha's hooks). Read it as `.store` inside a test or hook.
 */
export function useTestStore(): { readonly store: Store } {
  let store: Store | undefined;
  before(async () => {
    store = await connectTestStore();
  });
  after(async () => store?.close());
  return {
    get store(): Store {
      if (!store) throw new Error('the test store is connected in a before() hook');
      return store;
    },
  };
}

/** A run record as a start writes it (`pending`, nothing finished), for store and activity tests; `fields` override. */
export function pendingRun(
  fields: Pick<RunDoc, '_id' | 'account_id' | 'key_id'> & Partial<RunDoc>,
): RunDoc {
  return {
    published_workflow_id: generateId('wf'),
    published_workflow_version_id: generateId('wfv'),
    version: 1,
    status: 'pending',
    inputs: {},
    created_at: new Date(),
    completed_at: null,
    output: null,
    error: null,
    total_cost: null,
    events: null,
    finalized: false,
    ...fields,
  };
}
