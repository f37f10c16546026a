/**
 * D39: per-run payload keys, so that deleting a run makes its Temporal history undecryptable.
 *
 * Every run record holds a random 32-byte `payload_secret`, written with the record at start (no
 * extra round trip). A payload of the run's workflows (the run, its webhook child) and of their
 * activities is sealed under HKDF-SHA256(configured key, salt = that secret, info = run id): the
 * configured keys alone open nothing of a run, the secret alone (a copy of the database) neither.
 * Deleting the run deletes its record and with it the secret; from then on no key the service or
 * anyone else holds can open those payloads, wherever the history went (Temporal's own copy, an
 * archive, a backup, an export). Temporal's DeleteWorkflowExecution is asynchronous and does not
 * reach archives; a destroyed key is certain (docs/decisions.md D39).
 *
 * Secrets are cached per process for at most SECRET_TTL_MS (a deleted run's secret lingers that
 * long in other processes' memory, never on disk), and a failed refresh keeps using the cached
 * one, so a MongoDB blip does not fail workflow tasks of runs in flight. A worker also waits out
 * a blip for a secret it never had (`retry`): its SDK reports a task it could not decode
 * through the same codec, and a second failure there stops the whole worker.
 */
import { hkdfSync } from 'node:crypto';
import { retrying, type RetryPolicy } from '../retrying';

/** What the codec asks about a run: its secret, `undefined` for a run recorded before D39 (no secret: the configured key seals), null for no run (deleted). */
export type RunSecretLookup = (runId: string) => Promise<Buffer | null | undefined>;

/** How long a process keeps a run's secret before asking the store again. */
export const SECRET_TTL_MS = 60_000;
/** Secrets kept per process (a few dozen bytes each). */
const MAX_SECRETS = 20_000;

const RUN_WORKFLOW_ID = /^(run_[0-7][0-9A-HJKMNP-TV-Z]{25})(?:-[a-z]+)?$/;

/** The run a workflow id belongs to: the run's own workflow (`run_...`) and its children (`run_...-webhook`); null for others. */
export function runOfWorkflowId(workflowId: string | undefined): string | null {
  return (workflowId && RUN_WORKFLOW_ID.exec(workflowId)?.[1]) || null;
}

/** The AES-256 key of one run under one configured key. */
export function runPayloadKey(
  configured: Buffer,
  secret: Buffer,
  runId: string,
  _keyId?: string, // the configured key's id: callers that cache derived keys key them by it
): Buffer {
  return Buffer.from(hkdfSync('sha256', configured, secret, `wrs run payloads ${runId}`, 32));
}

interface Entry {
  secret: Buffer | undefined;
  at: number;
}

/** The per-process cache of run secrets in front of the store's lookup. */
export class RunSecrets {
  private readonly entries = new Map<string, Entry>();
  private readonly forgotten = new Set<string>();

  constructor(
    private readonly lookup: RunSecretLookup,
    private readonly ttlMs = SECRET_TTL_MS,
    /** Which failing lookups of a secret this process does not hold are tried again, how long (none: fail at once, the API's 503). */
    private readonly retry?: Pick<RetryPolicy, 'forMs' | 'retryable'>,
  ) {}

  /** A run's secret; `undefined`: a run without one; null: no such run (deleted, or never recorded). */
  async get(runId: string): Promise<Buffer | null | undefined> {
    if (this.forgotten.has(runId)) return null;
    const cached = this.entries.get(runId);
    if (cached && Date.now() - cached.at < this.ttlMs) return cached.secret;
    let secret: Buffer | null | undefined;
    try {
      // Stale beats failing a run's workflow task during a blip: no wait where one is cached.
      secret =
        this.retry && !cached
          ? await retrying(() => this.lookup(runId), this.retry)
          : await this.lookup(runId);
    } catch (err) {
      if (cached) return cached.secret;
      throw err;
    }
    if (secret === null) {
      this.entries.delete(runId);
      return null;
    }
    this.remember(runId, secret);
    return secret;
  }

  /** Known already (the process that starts a run made its secret): no lookup needed. */
  remember(runId: string, secret: Buffer | undefined): void {
    this.entries.delete(runId);
    this.entries.set(runId, { secret, at: Date.now() });
    if (this.entries.size > MAX_SECRETS) this.entries.delete(this.entries.keys().next().value!);
  }

  /** The run was deleted by this process: its secret goes from memory at once and is never fetched again here. */
  forget(runId: string): void {
    this.entries.delete(runId);
    this.forgotten.add(runId);
    if (this.forgotten.size > MAX_SECRETS)
      this.forgotten.delete(this.forgotten.values().next().value!);
  }
}
