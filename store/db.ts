/** MongoDB connection and the collections of the service, with the indexes they rely on. */
import {
  MongoBulkWriteError,
  MongoClient,
  MongoNetworkError,
  MongoServerSelectionError,
  type Collection,
  type Db,
} from 'mongodb';
import type {
  AccountDoc,
  ApiKeyDoc,
  ApiKeyHashDoc,
  CreditHoldDoc,
  IdempotencyKeyDoc,
  LedgerCheckpointDoc,
  LedgerDoc,
  RateLimitWindowDoc,
  RunChunkDoc,
  ItemBlockDoc,
  ItemUsageDoc,
  StoredRunDoc,
  WebhookDeliveryDoc,
  WorkflowDoc,
  WorkflowVersionDoc,
  WorkflowVersionNumberDoc,
} from './documents';
import { ensureExpiryIndexes, startSweeper } from './expiry';
import { RUN_SEARCH_INDEXES } from './run-search';
import { ensureEraseIndexes } from './erase-run';
import { indexKeyHashes } from './accounts';
import { retrying } from '../lib/retrying';

export interface Collections {
  accounts: Collection<AccountDoc>;
  apiKeys: Collection<ApiKeyDoc>;
  /** D6: keys by their secret's hash (store/accounts.ts findLiveKey). */
  apiKeyHashes: Collection<ApiKeyHashDoc>;
  workflows: Collection<WorkflowDoc>;
  workflowVersions: Collection<WorkflowVersionDoc>;
  /** Versions by number (store/workflows.ts findVersion). */
  workflowVersionNumbers: Collection<WorkflowVersionNumberDoc>;
  runs: Collection<StoredRunDoc>;
  runChunks: Collection<RunChunkDoc>;
  itemBlocks: Collection<ItemBlockDoc>;
  /** D19: what each block of a big run stores, summed per account for its storage quota (store/item-usage.ts). */
  itemUsage: Collection<ItemUsageDoc>;
  ledger: Collection<LedgerDoc>;
  ledgerCheckpoints: Collection<LedgerCheckpointDoc>;
  /** D17 hold chains (store/credit-holds.ts); read and written by `_id` only. */
  creditHolds: Collection<CreditHoldDoc>;
  rateLimits: Collection<RateLimitWindowDoc>;
  idempotencyKeys: Collection<IdempotencyKeyDoc>;
  webhookDeliveries: Collection<WebhookDeliveryDoc>;
}

export interface Store {
  client: MongoClient;
  db: Db;
  collections: Collections;
  close(): Promise<void>;
}

export interface StoreOptions {
  uri: string;
  dbName: string;
  appName?: string;
  /** Emit the driver's command events (benchmarks and tests count store round trips with them). */
  monitorCommands?: boolean;
  /** How long an operation waits for a reachable server; default DEFAULT_SERVER_SELECTION_TIMEOUT_MS. */
  serverSelectionTimeoutMs?: number;
  /** TCP connect + handshake of one new connection; default DEFAULT_CONNECT_TIMEOUT_MS. */
  connectTimeoutMs?: number;
  /** The longest one operation waits for its answer; default DEFAULT_SOCKET_TIMEOUT_MS. */
  socketTimeoutMs?: number;
}

/**
 * The driver's 30 s default would hold every request (and a load balancer's probes) for
 * 30 s while MongoDB is down. 2 s is well past a healthy server's selection time (a few ms on a
 * LAN) and leaves a client's own timeout room to read the 503; a replica-set election (up to ~12 s)
 * then answers 503 with Retry-After instead of stalling requests. Worker activities retry anyway.
 */
export const DEFAULT_SERVER_SELECTION_TIMEOUT_MS = 2_000;
/** A refused connection fails at once; this bounds a silent one (a dropped SYN, a stalled TLS handshake). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 2_000;

/**
 * The driver waits for an answer forever by default: a server that accepts a command and never
 * answers (a wedged store process) would hold the request, and the worker's shutdown, for good.
 * A minute is far past any operation of ours (the largest, reading a finished 100,000-item run,
 * takes ~1 s on FerretDB); past it the connection is dropped, and the operation fails with a
 * MongoNetworkTimeoutError: 503 with Retry-After in the API, a retried attempt in the worker.
 */
export const DEFAULT_SOCKET_TIMEOUT_MS = 60_000;

/**
 * The store could not be reached (nothing about the operation itself): worth waiting out. A bulk
 * write (the group commits of store/run-writes.ts) wraps the network error it met: a start whose
 * record's connection dropped answered 500 instead of 503.
 */
export function isStoreUnreachable(err: unknown): boolean {
  if (err instanceof MongoBulkWriteError) return isStoreUnreachable(err.errorResponse);
  return (
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNetworkError ||
    (err as { name?: unknown })?.name === 'MongoPoolClearedError'
  );
}

/**
 * connectStore for a process that is starting: while the store cannot be reached (a database still
 * starting, an outage) it tries again, 0.1 s doubling to 2 s apart, telling `onWait` of each failure,
 * for as long as that lasts. Exiting instead would have the orchestrator restart the process with
 * growing back-off (Kubernetes: up to 5 min), which then outlasts the outage. Any other failure
 * (a refused login, a bad URI) ends the start at once.
 */
export function connectStoreWhenReachable(
  opts: StoreOptions,
  onWait: (err: unknown) => void,
): Promise<Store> {
  return retrying(
    () =>
      connectStore(opts).catch((err: unknown) => {
        if (isStoreUnreachable(err)) onWait(err);
        throw err;
      }),
    { forMs: Infinity, retryable: isStoreUnreachable },
  );
}

/** Connects, creates the indexes (idempotent) and returns the typed collections. */
export async function connectStore(opts: StoreOptions): Promise<Store> {
  const client = new MongoClient(opts.uri, {
    appName: opts.appName ?? 'wrs',
    serverSelectionTimeoutMS: opts.serverSelectionTimeoutMs ?? DEFAULT_SERVER_SELECTION_TIMEOUT_MS,
    connectTimeoutMS: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    socketTimeoutMS: opts.socketTimeoutMs ?? DEFAULT_SOCKET_TIMEOUT_MS,
    monitorCommands: opts.monitorCommands ?? false,
  });
  try {
    return await openStore(client, opts.dbName);
  } catch (err) {
    // A start that failed halfway (the server gone between the connect and the indexes) leaves no monitor behind.
    await client.close().catch(() => undefined);
    throw err;
  }
}

async function openStore(client: MongoClient, dbName: string): Promise<Store> {
  await client.connect();
  const db = client.db(dbName);
  const collections: Collections = {
    accounts: db.collection('accounts'),
    apiKeys: db.collection('api_keys'),
    apiKeyHashes: db.collection('api_key_hashes'),
    workflows: db.collection('workflows'),
    workflowVersions: db.collection('workflow_versions'),
    workflowVersionNumbers: db.collection('workflow_version_numbers'),
    runs: db.collection('runs'),
    runChunks: db.collection('run_chunks'),
    itemBlocks: db.collection('item_blocks'),
    itemUsage: db.collection('item_usage'),
    ledger: db.collection('ledger'),
    ledgerCheckpoints: db.collection('ledger_checkpoints'),
    creditHolds: db.collection('credit_holds'),
    rateLimits: db.collection('rate_limits'),
    idempotencyKeys: db.collection('idempotency_keys'),
    webhookDeliveries: db.collection('webhook_deliveries'),
  };
  await Promise.all([
    collections.apiKeys.createIndex({ hash: 1 }, { unique: true, name: 'hash_unique' }),
    collections.workflows.createIndex(
      { account_id: 1, slug: 1 },
      { unique: true, name: 'account_slug_unique' },
    ),
    collections.workflowVersions.createIndex(
      { workflow_id: 1, version: 1 },
      { unique: true, name: 'workflow_version_unique' },
    ),
    // D23, D37: the run list's filters (store/run-search.ts). One createIndex each: FerretDB 1.24
    // drops the connection when createIndexes of several indexes races another process's.
    ...RUN_SEARCH_INDEXES.map(({ key, ...options }) => collections.runs.createIndex(key, options)),
    collections.ledger.createIndex({ account_id: 1, _id: 1 }, { name: 'account_entries' }),
    // The credit gate sums only the entries after the account's newest checkpoint (store/ledger.ts).
    collections.ledger.createIndex({ account_id: 1, created_at: 1 }, { name: 'account_created' }),
    collections.ledgerCheckpoints.createIndex({ account_id: 1, n: -1 }, { name: 'account_newest' }),
    // D29: the retention job finds old finalized runs and old deliveries by creation time.
    collections.runs.createIndex({ created_at: 1 }, { name: 'created_at' }),
    collections.webhookDeliveries.createIndex({ created_at: 1 }, { name: 'created_at' }),
    // D17: the hourly sweep of held credit finds the accounts whose chain went quiet by entry time.
    collections.creditHolds.createIndex({ created_at: 1 }, { name: 'created_at' }),
    // A big run's chunks are read in one ordered query (store/runs.ts chunksOf) and removed by run (retention).
    collections.runChunks.createIndex({ run_id: 1, index: 1 }, { name: 'run_chunks' }),
    // D39: a deleted run's idempotency keys, webhook delivery and files are found by run id (store/erase-run.ts).
    ensureEraseIndexes(collections, db),
    // D35: blocks are read by `_id` only; retention and erasure remove them by run.
    collections.itemBlocks.createIndex({ run_id: 1 }, { name: 'run_blocks' }),
    // D19: an account's sum of what its big runs store; retention and erasure remove it by run.
    collections.itemUsage.createIndex({ account_id: 1 }, { name: 'account_usage' }),
    collections.itemUsage.createIndex({ run_id: 1 }, { name: 'run_usage' }),
  ]);
  await indexKeyHashes(collections); // D6: keys issued before they were found by hash
  const expiring = [collections.rateLimits, collections.idempotencyKeys];
  // D16/D18: old windows and keys older than 24 h go by TTL index, or by a sweep where TTL is missing (FerretDB v1).
  const stopSweeper = (await ensureExpiryIndexes(expiring))
    ? () => undefined
    : startSweeper(expiring);
  return {
    client,
    db,
    collections,
    close: async () => {
      stopSweeper();
      await client.close();
    },
  };
}
