/** MongoDB connection and the collections of the service, with the indexes they rely on. */
import { MongoClient, type Collection, type Db } from 'mongodb';
import type { AccountDoc, ApiKeyDoc, LedgerDoc, RunDoc, WorkflowDoc, WorkflowVersionDoc } from './documents';

export interface Collections {
  accounts: Collection<AccountDoc>;
  apiKeys: Collection<ApiKeyDoc>;
  workflows: Collection<WorkflowDoc>;
  workflowVersions: Collection<WorkflowVersionDoc>;
  runs: Collection<RunDoc>;
  ledger: Collection<LedgerDoc>;
}

export interface Store {
  client: MongoClient;
  db: Db;
  collections: Collections;
  close(): Promise<void>;
}

/** Connects, creates the indexes (idempotent) and returns the typed collections. */
export async function connectStore(opts: { uri: string; dbName: string; appName?: string }): Promise<Store> {
  const client = new MongoClient(opts.uri, {
    appName: opts.appName ?? 'wrs',
    serverSelectionTimeoutMS: 5_000,
    // Fail a request fast while the database is down instead of hanging the caller (issue 8).
    connectTimeoutMS: 5_000,
  });
  await client.connect();
  const db = client.db(opts.dbName);
  const collections: Collections = {
    accounts: db.collection('accounts'),
    apiKeys: db.collection('api_keys'),
    workflows: db.collection('workflows'),
    workflowVersions: db.collection('workflow_versions'),
    runs: db.collection('runs'),
    ledger: db.collection('ledger'),
  };
  await Promise.all([
    collections.apiKeys.createIndex({ hash: 1 }, { unique: true, name: 'hash_unique' }),
    collections.workflows.createIndex({ account_id: 1, slug: 1 }, { unique: true, name: 'account_slug_unique' }),
    collections.workflowVersions.createIndex({ workflow_id: 1, version: 1 }, { unique: true, name: 'workflow_version_unique' }),
    collections.runs.createIndex({ account_id: 1, _id: -1 }, { name: 'account_newest' }),
    collections.ledger.createIndex({ account_id: 1, _id: 1 }, { name: 'account_entries' }),
  ]);
  return { client, db, collections, close: () => client.close() };
}
