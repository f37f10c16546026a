/** The shapes of the documents the service keeps in MongoDB. Ids follow D5 and are the `_id`. */
import type { RunUsage } from '../domain/run-usage';
import type { Binary } from 'mongodb';
import type { WorkflowDocument } from '../domain/graph';
import type { Contract } from '../domain/contract';
import type { RunEvent, RunOutput, RunStatus } from '../domain/run';
import type { StoredOutput } from '../domain/item-blocks';
import type { RunPriority } from '../domain/run-priority';

export interface AccountDoc {
  _id: string; // acct_...
  name: string;
  // No balance field: the balance is the sum of the account's ledger entries (store/ledger.ts).
  /** Per-account D16 limits; absent ones use the configured defaults. Copied onto the account's keys. */
  rate_limits?: RateLimitOverrides | null;
  /** D20: `whsec_` + base64 of 24 random bytes, signing the account's webhooks; made on first use for older accounts. */
  webhook_secret?: string;
  /** D36: the account's provider calls in flight at most per worker process; absent: the operator's default. */
  max_provider_calls?: number | null;
  /** D19: what the account's files (uploads and its runs' files) may hold at once, in bytes; absent: the operator's default. */
  max_file_storage_bytes?: number | null;
  /** D26: what the account's published workflow versions may hold, in bytes; absent: the operator's default. */
  max_workflow_storage_bytes?: number | null;
  /**
   * D17: how many times credit was taken away (a negative `credits add`); absent: never. API
   * processes remember the ledger's sums as a lower bound, which holds only while the balance
   * grows, so each sums anew when this changes (api/limits/credit-check.ts).
   */
  credit_removals?: number;
  created_at: Date;
}

/** Per-account overrides of the D16 rate limits (requests per fixed one-minute window). */
export interface RateLimitOverrides {
  starts_per_minute?: number;
  requests_per_minute?: number;
}

export interface ApiKeyDoc {
  _id: string; // key_...
  account_id: string;
  /** SHA-256 hex of the secret (D6); the secret itself is never stored. */
  hash: string;
  /** First characters of the secret, for humans telling keys apart. */
  hint: string;
  name: string | null;
  created_at: Date;
  revoked_at: Date | null;
  /** A copy of the account's `rate_limits`, so authentication yields them without a second query (D16). */
  rate_limits?: RateLimitOverrides | null;
}

/**
 * D6: a key's secret hash as `_id`, naming the key: authentication finds a key by `_id` twice
 * instead of by a filter on `hash`, which the embedded FerretDB answers by decoding every key
 * (272 ms for an unknown key among 10,000, measured; 1.3 s among 50,000).
 */
export interface ApiKeyHashDoc {
  _id: string; // SHA-256 hex of the secret
  key_id: string;
}

export interface WorkflowDoc {
  _id: string; // wf_...
  account_id: string;
  slug: string;
  name: string | null;
  public: boolean;
  /** The bytes its versions hold (graph and contract as JSON), for the account's quota; absent before it was counted. */
  stored_bytes?: number;
  created_at: Date;
  updated_at: Date;
  /**
   * Its newest version, set by the publish that made it (store/workflows.ts latestVersionPointer):
   * a start reads it with the record by `_id` instead of sorting `workflow_versions` by a filter
   * FerretDB answers by decoding every version. `published_at` is that publish's `updated_at`:
   * a later `updated_at` is a publish that did not set it (a crash, an earlier release).
   */
  latest?: { id: string; version: number; published_at: Date };
  /** Set by a delete before anything of the workflow goes (store/workflows.ts deleteWorkflowVersions): gone to every read but a delete, as a run's `deleting`. */
  deleting?: true;
}

/** A version by its number: `_id` `<wf_...>#<number>`, so a pin by number is read by `_id` (as `latest`). */
export interface WorkflowVersionNumberDoc {
  _id: string;
  workflow_id: string;
  version_id: string;
}

export interface WorkflowVersionDoc {
  _id: string; // wfv_...
  workflow_id: string;
  account_id: string;
  version: number;
  graph: WorkflowDocument;
  contract: Contract;
  created_at: Date;
}

export interface RunDoc {
  _id: string; // run_...
  account_id: string;
  key_id: string;
  published_workflow_id: string;
  published_workflow_version_id: string;
  version: number;
  status: RunStatus;
  inputs: Record<string, unknown>;
  created_at: Date;
  completed_at: Date | null;
  output: RunOutput | null;
  error: string | null;
  total_cost: number | null;
  /** The whole event log, written once with the final state (D11, D29); of a large run, only what `chunks` do not hold. */
  events: RunEvent[] | null;
  /** How many `run_chunks` documents hold the rest of a large run's events and output (absent or 0: none). */
  chunks?: number;
  /** The id of output item 0 of a chunked run; the chunks' compact item events derive every item id from it. */
  item_id_base?: string | null;
  /** D35: outputs whose items are stored in blocks (domain/item-blocks.ts), by label. */
  stored_outputs?: Record<string, StoredOutput> | null;
  /**
   * D38: a run that did not complete whose kept items' `item_index` is their row (RunFinal
   * `itemsAtRows`); absent from such runs of workflow code before, whose a re-run cannot carry.
   */
  items_at_rows?: boolean;
  /** True once the final state has been written; the write happens exactly once. */
  finalized: boolean;
  /** D20: where the run record is POSTed when the run ends (absent or null: nowhere). */
  webhook?: string | null;
  /**
   * D17: the credit held for the run from its start (store/credit-holds.ts), and what was added to
   * it while the run worked (extendRunHold); released by the run's one ledger entry. Absent: none.
   */
  hold_usd?: number;
  /** D17: each hold added while the run worked, by its number in the run (so a retried request adds nothing). */
  hold_grants?: Record<string, number>;
  /** D37: the caller's key/value pairs (stored as `metadata_tags`, store/run-metadata.ts). Absent: none. */
  metadata?: Record<string, string>;
  /** D36: the order of the account's waiting work; absent: `normal`. */
  priority?: RunPriority;
  /** D39: base64 of the 32 random bytes its Temporal payloads' key derives from (lib/codec/run-keys.ts); never shown. Absent: runs recorded before. */
  payload_secret?: string;
  /** D38: the run this one re-runs (absent: not a re-run). */
  parent_run_id?: string;
  /**
   * D38: the run whose record holds this run's inputs (a re-run's first ancestor): they are
   * referenced, not copied, and `inputs` is then `{}`. Deleting that run (D39) erases them for
   * every re-run of it too (store/runs.ts `runInputs`). Absent: the inputs are in `inputs`.
   */
  inputs_from?: string;
  /** D38: set on a re-run of failed items only: the workflow carries the parent's completed items over. */
  rerun_items?: 'failed';
  /** D36: the caller's `max_cost` (USD) and `timeout_seconds`, which the workflow arguments are made from. Absent: none given. */
  max_cost?: number;
  timeout_seconds?: number;
  /** D36: what the run used, written with its end. Absent: not ended, or recorded before D36. */
  usage?: RunUsage;
  /**
   * D39: set as its erasure begins (store/erase-run.ts): from then on every read of the run is
   * 404, though a crash may leave the record while its pages are half gone; a repeated DELETE
   * finishes it. Absent: not being deleted.
   */
  deleting?: true;
}

/** D20: the delivery of one run's webhook; `_id` is its `webhook-id` (`msg_<run ULID>`), the same for every attempt. */
export interface WebhookDeliveryDoc {
  _id: string;
  run_id: string;
  account_id: string;
  url: string;
  /** `pending` while attempts go on; `failed` once given up (refused, a permanent 4xx, or 24 h of failures). */
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  /** HTTP status of the last answer, null when there was none (refused, unreachable, timed out). */
  last_status: number | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface LedgerDoc {
  _id: string; // led_...; a run's debit reuses the run's ULID so it exists at most once
  account_id: string;
  /** `release`: gives back a hold whose run never started (or a process's unused lease), amount 0. */
  kind: 'run' | 'credit' | 'release';
  run_id: string | null;
  /** Signed: credits are positive, run debits negative. */
  amount_usd: number;
  note: string | null;
  created_at: Date;
  /** A run's debit: when the run ended, which tells a retried finalize from a second, different end (store/run-end.ts). */
  run_ended_at?: Date;
  /** D17: the hold this entry gives back (a run's debit releases the run's hold); absent: none. */
  released_usd?: number;
}

/**
 * A ledger checkpoint (store/ledger.ts): the sum of an account's entries created before `up_to`.
 * `_id` is `chk_<account id>_<n>`, inserted once and never updated (single-document writes only).
 */
export interface LedgerCheckpointDoc {
  _id: string;
  account_id: string;
  n: number;
  up_to: Date;
  total_usd: number;
  /** The sum of those entries' `released_usd` (absent in checkpoints written before holds existed: 0). */
  released_usd?: number;
  created_at: Date;
}

/**
 * Entry n of an account's hold chain (store/credit-holds.ts): `_id` is `hold_<account id>_<n>`,
 * inserted once and never updated, entry n only after entry n-1 exists, so the unique `_id` orders
 * every reservation of the account on any MongoDB-compatible server (D17).
 */
export interface CreditHoldDoc {
  _id: string;
  account_id: string;
  n: number;
  /** What this entry reserves: the holds of the runs it admitted plus any lease for later starts. */
  amount_usd: number;
  /** The sum of `amount_usd` over entries 1..n: everything ever reserved for the account. */
  reserved_usd: number;
  /** The runs it admitted (for people reading the chain); a lease's runs are in their own records (`hold_usd`). */
  runs: string[];
  created_at: Date;
}

/** One D16 window: `_id` is `<key id>:<bucket>:<window start in epoch minutes>`, counted by `$inc`. */
export interface RateLimitWindowDoc {
  _id: string;
  key_id: string;
  bucket: 'starts' | 'requests';
  window_start: Date;
  count: number;
  /** Past the end of the window; a TTL index (or the sweeper where TTL is missing) removes the document. */
  expires_at: Date;
}

/** An Idempotency-Key of the start call (D18): `_id` is `<account id>:<key>`; the first request's insert wins. */
export interface IdempotencyKeyDoc {
  _id: string;
  account_id: string;
  key: string;
  /** SHA-256 hex of the canonical JSON of the start request: the same key with another body is a 409. */
  request_hash: string;
  /** Allocated before the run exists, so every request with this key answers with the same run. */
  run_id: string;
  created_at: Date;
  /** created_at + 24 h; a document past it counts as absent even before the TTL index removes it. */
  expires_at: Date;
}

/** One chunk of a large run's end (domain/run-chunks.ts): `_id` is `<run id>.<index>`, written once before the record. */
export interface RunChunkDoc {
  _id: string;
  run_id: string;
  index: number;
  /** Compact item events (domain/run-chunks.ts). */
  item_events?: string;
  /** JSON of `RunEvent[]`: chunks stored before item events were compact. */
  events_json?: string;
  /** JSON of `RunOutput`. */
  output_json: string;
  created_at: Date;
}

/** A page of stored items (domain/item-blocks.ts, D35): `_id` is `<run id>:<node id>:<page>`. */
export interface ItemBlockDoc {
  _id: string;
  run_id: string;
  node_id: string;
  page: number;
  /**
   * The page's rows in order, one line each (`<cost> <item JSON>`, empty: not finished), compressed
   * with raw deflate (store/item-blocks.ts): FerretDB hands a compressed Binary over ~2.5x faster
   * than the JSON string of the same rows, and stores a third of the bytes.
   */
  rows_z?: Binary;
  /** The same rows as JSON text: pages written before `rows_z` (still read). */
  rows_json?: string;
  /**
   * D38: the run whose page of the same node and number holds the rows this page carries over by
   * reference (a line `^`): a re-run's parent. Absent when the page carries nothing.
   */
  base?: string;
  created_at: Date;
}

/**
 * D19, D35: what one block of a big node's rows stores, for its account's storage quota
 * (store/item-usage.ts): `_id` is the block's (`<run id>:<node id>:<first row>`), written by the
 * block's one writer.
 */
export interface ItemUsageDoc {
  _id: string;
  run_id: string;
  account_id: string;
  /** The JSON bytes of the block's stored items. */
  bytes: number;
  created_at: Date;
}

/**
 * A run as stored (store/runs.ts converts): its output and event log are JSON text. Outputs are
 * free-form JSON that nodes produce (an http_request's body, a model's answer), and FerretDB 1.x
 * refuses keys that start with `$` or contain `.` and arrays directly inside arrays; stored as
 * documents, such a run could never be finalized. Nothing queries inside them, so text loses nothing.
 */
export type StoredRunDoc = Omit<RunDoc, 'output' | 'events' | 'metadata' | 'inputs'> & {
  /**
   * JSON of the run's inputs: as text, a 100,000-row list costs FerretDB ~4× less to write and read
   * than as an array of as many values (every read or update of the record handles all of it).
   */
  inputs_json?: string;
  /** The inputs as a document: records written before `inputs_json` (still read). */
  inputs?: Record<string, unknown>;
  /** D37: the run's metadata as `<key>=<value>` strings, in the caller's order (store/run-metadata.ts). */
  metadata_tags?: string[];
  /** JSON of `RunOutput`, or null before the run ends (and for runs that end without one). */
  output_json: string | null;
  /** JSON of `RunEvent[]`, or null before the run ends. */
  events_json: string | null;
};
