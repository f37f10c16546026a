import fs from 'node:fs';
import { z } from 'zod';
import type { RunOptions } from '../domain/run';

/** Price of one model: USD per million tokens in and out, per generated image, per second of prediction. */
export const PriceSchema = z.object({
  input_per_mtok: z.number().nonnegative().default(0),
  output_per_mtok: z.number().nonnegative().default(0),
  per_image: z.number().nonnegative().default(0),
  per_second: z.number().nonnegative().default(0),
});
export type Price = z.infer<typeof PriceSchema>;

/** One provider endpoint: an OpenAI-compatible API (llm, image_generation) or a Replicate-style one (model). */
export const ProviderSchema = z.object({
  kind: z.enum(['openai', 'replicate']),
  base_url: z.url(),
  api_key: z.string().optional(),
});
export type Provider = z.infer<typeof ProviderSchema>;

const int = (fallback: number) => z.coerce.number().int().positive().default(fallback);
// `z.coerce.boolean()` would read "false" as true: only these spellings are accepted.
const flag = z
  .enum(['true', 'false', '1', '0', ''])
  .default('false')
  .transform((v) => v === 'true' || v === '1');
const jsonString = <T extends z.ZodType>(schema: T, fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'is not valid JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema);

/**
 * Every environment variable the service reads, with its default. This is the only place
 * that knows about process.env: entry points parse it once and pass the result down.
 */
export const EnvSchema = z.object({
  API_HOST: z.string().default('127.0.0.1'),
  API_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  PUBLIC_BASE_URL: z.url().optional(),
  TLS_CERT_FILE: z.string().optional(),
  TLS_KEY_FILE: z.string().optional(),
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('wrs-runs'),
  MONGODB_URI: z.string().default('mongodb://127.0.0.1:27017/'),
  MONGODB_DB: z.string().default('wrs'),
  // While MongoDB is unreachable a request waits at most about this long for it, then answers 503.
  MONGODB_SERVER_SELECTION_TIMEOUT_MS: int(2_000),
  MONGODB_CONNECT_TIMEOUT_MS: int(2_000),
  MONGODB_SOCKET_TIMEOUT_MS: int(60_000),
  // The longest a start or cancel waits for Temporal (a hung server, not a refused connection: that is ~1 s).
  TEMPORAL_RPC_TIMEOUT_MS: int(10_000),
  OPENAI_BASE_URL: z.url().optional(),
  OPENAI_API_KEY: z.string().optional(),
  PROVIDERS: jsonString(z.record(z.string(), ProviderSchema), '{}'),
  PRICES: jsonString(z.record(z.string(), PriceSchema), '{}'),
  START_FEE_USD: z.coerce.number().nonnegative().default(0.001),
  // D17: the hold of one call priced by what the provider reports (tokens, seconds), unknown at start.
  CREDIT_HOLD_PER_CALL_USD: z.coerce.number().nonnegative().default(0.01),
  // D17: a model with no PRICES entry runs free (development) or is refused at a run's start.
  UNPRICED_MODELS: z.enum(['free', 'refuse']).default('free'),
  RUN_CONCURRENCY: int(8),
  // A workflow may ask for more (its `concurrency`), up to this (at least 64, so a big run's items run wide).
  RUN_MAX_CONCURRENCY: int(64),
  RUN_TIMEOUT_MS: int(3_600_000),
  NODE_ATTEMPT_TIMEOUT_MS: int(600_000),
  NODE_MAX_ATTEMPTS: int(5),
  RETRY_INITIAL_MS: int(1_000),
  MAX_JSON_BODY_BYTES: int(1_048_576),
  // What one account's published workflow versions may hold (D26): 1 GiB, a thousand of the largest graphs.
  WORKFLOW_STORAGE_MAX_BYTES: int(1_073_741_824),
  MAX_JSON_DEPTH: int(64),
  STREAM_POLL_MS: int(1_000),
  STREAM_KEEPALIVE_MS: int(15_000),
  STREAM_MAX_BUFFERED_BYTES: int(1_048_576),
  // Open streams (SSE) per API key in one API process; more is a 429 `too_many_streams`.
  STREAM_MAX_PER_KEY: int(100),
  // D35: results-file downloads per API key in one API process; more is a 429 `too_many_downloads`.
  DOWNLOAD_MAX_PER_KEY: int(4),
  // Connection bounds (docs/api.md "Connections"): request line and headers, then the whole
  // request (headers and body; not the answer, so streams are not cut), and inactivity on the
  // socket while a request is received or a non-stream answer is sent (0: off).
  API_HEADERS_TIMEOUT_MS: int(30_000),
  API_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(0).default(300_000),
  API_IDLE_TIMEOUT_MS: z.coerce.number().int().min(0).default(120_000),
  // SIGTERM drain (api/main.ts): /readyz answers 503 for API_SHUTDOWN_DELAY_MS while the process
  // still serves (a load balancer's health checks take it out of rotation), then the listener
  // closes, streams end with a reconnect comment and requests in flight get API_SHUTDOWN_GRACE_MS.
  API_SHUTDOWN_DELAY_MS: z.coerce.number().int().min(0).default(0),
  API_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(20_000),
  QUERY_TIMEOUT_MS: int(3_000),
  // How long an API process serves a finished run from memory (0: never); a run removed by retention (D29) may show that long.
  FINISHED_RUN_CACHE_MS: z.coerce.number().int().min(0).default(60_000),
  RATE_LIMIT_STARTS_PER_MINUTE: int(60),
  RATE_LIMIT_REQUESTS_PER_MINUTE: int(1_200),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  WORKER_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  WORKER_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(30_000),
  // V8's heap growing factor in the worker, as a percent over the live heap (worker/runtime.ts
  // tuneWorkerHeap): left to V8, a busy worker's old space grew to ~3× its live set between
  // collections (a 100,000-row run's worker peaked far over 512 MB); 0 leaves V8's own heuristic.
  WORKER_HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(1_000).default(30),
  // D36: provider calls one worker process has in flight at most (shared round-robin between
  // accounts), and one account's at most unless the account has its own cap (`wrs accounts provider-calls`).
  WORKER_PROVIDER_CALLS: int(128),
  ACCOUNT_MAX_PROVIDER_CALLS: int(64),
  // D35: blocks of big nodes one worker process runs at once (shared round-robin between accounts):
  // each holds the items of its unwritten pages, so their number bounds the worker's memory.
  WORKER_BLOCKS: int(8),
  // What the answers one worker process reads at once may hold in all (lib/net/read-budget.ts): each
  // is capped by MAX_ANSWER_BYTES, but a tenant's calls in flight near that cap would hold gigabytes.
  WORKER_ANSWER_BUFFER_BYTES: int(134_217_728),
  // D36: while the worker's event loop lags more than this (p99, ms) its provider-call slots shrink, so
  // small runs' work is not queued behind a saturated CPU (activities/load-governor.ts); 0 turns it off.
  WORKER_CALL_LAG_TARGET_MS: z.coerce.number().int().min(0).default(40),
  // D36: the same while two or more accounts have provider calls on the worker: a shared worker keeps
  // its event loop ready for any account's small run (activities/load-governor.ts says why).
  WORKER_CALL_LAG_TARGET_SHARED_MS: z.coerce.number().int().min(1).default(15),
  // Files (D19, D10). FILE_URL_SECRET signs file links; API and worker must share it.
  MAX_UPLOAD_BYTES: int(268_435_456), // 256 MiB: a million 200-byte rows as JSON Lines (D35); streamed, memory stays flat
  // What one account's files (uploads and those its runs made) may hold at once (D19): 100 GiB, so one tenant cannot fill the storage all share.
  FILE_STORAGE_MAX_BYTES: int(107_374_182_400),
  FILE_URL_SECRET: z.string().min(32, { message: 'must be at least 32 characters' }).optional(),
  FILE_URL_TTL_SECONDS: int(604_800),
  FILE_FETCH_TIMEOUT_MS: int(60_000),
  // The largest answer the worker reads into memory: a provider's JSON, an http_request node's JSON or text (lib/net/read-limited.ts).
  MAX_ANSWER_BYTES: int(16_777_216),
  ALLOW_HTTP_URLS: flag,
  ALLOW_PRIVATE_NETWORK: flag,
  ALLOW_PRIVATE_HOSTS: z.string().default(''),
  MODEL_POLL_MS: int(1_000),
  // Webhooks (D20): https and public addresses only unless these say otherwise (tests, development).
  WEBHOOK_ALLOW_HTTP: flag,
  WEBHOOK_ALLOW_PRIVATE_NETWORK: flag,
  // One delivery attempt; capped below the attempt's 60 s activity timeout (workflows/webhook-workflow.ts).
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().max(50_000).default(10_000),
  WEBHOOK_RETRY_INITIAL_MS: int(5_000),
  // D20: webhook delivery attempts one worker makes at once (their own task queue).
  WORKER_WEBHOOK_DELIVERIES: int(32),
  // D29: run records, their event logs, idempotency keys and files older than this are removed.
  RETENTION_DAYS: z.coerce.number().positive().default(30),
  NODE_ENV: z.string().optional(),
  // Connecting to a Temporal cluster with TLS, mTLS or an API key (Temporal Cloud).
  // TEMPORAL_ADDRESS may list several frontends, comma-separated: the first that answers is used.
  TEMPORAL_TLS: flag,
  TEMPORAL_TLS_CA_FILE: z.string().optional(),
  TEMPORAL_TLS_CERT_FILE: z.string().optional(),
  TEMPORAL_TLS_KEY_FILE: z.string().optional(),
  TEMPORAL_TLS_SERVER_NAME: z.string().optional(),
  TEMPORAL_API_KEY: z.string().optional(),
  // The Temporal SDK's own metrics (task slots, poll latency, sticky cache) as Prometheus text on this port.
  WORKER_SDK_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  // A workflow bundle built with the image (tools/scripts/bundle-workflows.ts); unset, the worker bundles at start.
  WORKFLOW_BUNDLE_PATH: z.string().optional(),
  // The playground page built with the image (tools/scripts/bundle-playground.ts); unset, the API bundles it on first use.
  PLAYGROUND_BUNDLE_DIR: z.string().optional(),
  // D32: payload encryption keys, `id:base64key` (32 bytes) separated by commas; the LAST one encrypts, all decrypt.
  PAYLOAD_KEYS: z.string().default('').transform(parsePayloadKeys),
  // D32: `false` sends payloads to Temporal in plaintext: only to measure the codec's cost (bench), refused in production.
  PAYLOAD_ENCRYPTION: z.enum(['true', 'false']).default('true'),
  // D32: the operators' token of the codec server (/codec/decode, /codec/encode); unset: the codec server refuses everything.
  CODEC_TOKEN: z.string().min(32, { message: 'must be at least 32 characters' }).optional(),
  // D32: browser origins (the Temporal UI's) allowed to call the codec server, comma-separated.
  CODEC_CORS_ORIGINS: z.string().default(''),
  // OpenTelemetry traces over OTLP/HTTP to this base URL (`/v1/traces` is appended); unset: tracing is off.
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
});

/** One payload encryption key (D32): its id travels in every encrypted payload's metadata. */
export interface PayloadKey {
  id: string;
  key: Buffer;
}

/** Parses PAYLOAD_KEYS (`id:base64key,...`, each key 32 bytes, ids unique), keeping the order: the last encrypts. */
function parsePayloadKeys(text: string, ctx: z.RefinementCtx): PayloadKey[] {
  const keys: PayloadKey[] = [];
  for (const entry of text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const colon = entry.indexOf(':');
    const id = entry.slice(0, colon);
    const key = Buffer.from(entry.slice(colon + 1), 'base64');
    if (colon < 1 || !/^[A-Za-z0-9._-]{1,64}$/.test(id))
      ctx.addIssue({
        code: 'custom',
        message: `each entry is id:base64key (id of letters, digits, . _ -), got '${id || entry.slice(0, 8)}…'`,
      });
    else if (key.length !== 32)
      ctx.addIssue({
        code: 'custom',
        message: `key '${id}' is ${key.length} bytes, AES-256 needs 32 (openssl rand -base64 32)`,
      });
    else if (keys.some((k) => k.id === id))
      ctx.addIssue({ code: 'custom', message: `key id '${id}' appears twice` });
    else keys.push({ id, key });
  }
  return keys;
}

export interface Config {
  api: {
    host: string;
    port: number;
    publicBaseUrl?: string;
    /** The playground page built into the image; unset: bundled from source on first use. */
    playgroundBundleDir?: string;
    tls?: { certFile: string; keyFile: string };
    maxJsonBodyBytes: number;
    maxJsonDepth: number;
    /** D26: the bytes one account's published workflow versions may hold (store/storage-quota.ts). */
    workflowStorageMaxBytes: number;
    queryTimeoutMs: number;
    /** Time to live of a finished run's view in an API process's cache (0 disables it). */
    finishedRunCacheMs: number;
    stream: { pollMs: number; keepaliveMs: number; maxBufferedBytes: number; maxPerKey: number };
    /** D35: results-file downloads one key may have in progress in one API process. */
    downloadMaxPerKey: number;
    /** Connection bounds (api/server.ts); 0 turns the request or idle timeout off. */
    timeouts: { headersMs: number; requestMs: number; idleMs: number };
    /** SIGTERM drain: readiness fails for `delayMs` before the listener closes; requests in flight get `graceMs`. */
    shutdown: { delayMs: number; graceMs: number };
    /** D16 defaults per key and one-minute window; an account's `rate_limits` override them. */
    rateLimits: { startsPerMinute: number; requestsPerMinute: number };
  };
  temporal: {
    address: string;
    namespace: string;
    taskQueue: string;
    /** Deadline of the API's start and cancel calls (queries use api.queryTimeoutMs). */
    rpcTimeoutMs: number;
    /** Every frontend address of TEMPORAL_ADDRESS, in order; `address` is the first. */
    addresses: string[];
    /** TLS to the frontend: system roots unless `caFile`; a client certificate for mTLS. Absent: plain gRPC. */
    tls?: { caFile?: string; certFile?: string; keyFile?: string; serverName?: string };
    /** Temporal Cloud (or any server with an API-key authorizer): sent as a bearer token, TLS implied. */
    apiKey?: string;
  };
  mongo: {
    uri: string;
    dbName: string;
    /** How long an operation waits for a reachable server before it fails (and the API answers 503). */
    serverSelectionTimeoutMs: number;
    connectTimeoutMs: number;
    /** The longest one store operation waits for its answer before its connection is dropped (503 in the API, a retry in the worker). */
    socketTimeoutMs: number;
  };
  providers: Record<string, Provider>;
  prices: Record<string, Price>;
  /** D17 holds (domain/run-hold.ts), and whether a model PRICES does not list may run (free) or not. */
  credits: { holdPerCallUsd: number; unpricedModels: 'free' | 'refuse' };
  runs: RunOptions;
  files: {
    /** D10: the largest upload, URL input or stored node output, in bytes. */
    maxBytes: number;
    /** D19: the bytes one account's files (uploads and its runs' files) may hold at once (store/storage-quota.ts). */
    storageMaxBytes: number;
    /**
     * HMAC key of signed file links (D19). Unset (never in production): the API and the worker
     * share a random one kept in MongoDB (lib/files/url-secret.ts).
     */
    urlSecret?: string;
    urlTtlSeconds: number;
    /** Whole-download time limit of a URL input or a provider output. */
    fetchTimeoutMs: number;
    /** D19: `http://` URL inputs (default: https only). */
    allowHttpUrls: boolean;
    /** D19: URL inputs and http_request nodes on private, loopback, link-local or metadata addresses (tests only: refused in production). */
    allowPrivateNetwork: boolean;
    /** Host names (lower-case) whose private addresses URL inputs may reach, e.g. an internal asset server. */
    allowPrivateHosts: string[];
    /**
     * The largest answer read into memory (a provider's JSON, an http_request node's JSON or text);
     * larger ones are cut off while reading and fail their item. Files stream into storage under maxBytes.
     */
    maxAnswerBytes: number;
  };
  /** How often a `model` node asks for its prediction's state. */
  predictions: { pollMs: number };
  /** D20 webhook delivery (the worker's side; the API checks only the scheme). */
  webhooks: {
    /** `http://` webhook URLs (default: https only). */
    allowHttp: boolean;
    /** Webhooks to private, loopback, link-local or metadata addresses (tests, or an internal receiver: allowed in production). */
    allowPrivateNetwork: boolean;
    /** Time limit of one delivery attempt. */
    timeoutMs: number;
    /** Delivery attempts one worker makes at once (workflows/definitions.ts webhookTaskQueue). */
    workerDeliveries: number;
  };
  /** D29: how long runs, their event logs, idempotency keys and files are kept. */
  retention: { days: number };
  logLevel: z.infer<typeof EnvSchema>['LOG_LEVEL'];
  /** D36: the worker's provider-call scheduler (activities/call-scheduler.ts). */
  providerCalls: {
    /** Calls one worker process has in flight at most, all accounts together. */
    workerSlots: number;
    /** An account's calls in flight at most per worker process, unless the account has its own cap. */
    accountCap: number;
    /** Event-loop delay (ms, p99) above which the worker lowers its slots; 0: never. */
    lagTargetMs: number;
    /** The same while two or more accounts have calls on the worker. */
    sharedLagTargetMs: number;
    /** D35: blocks of big nodes one worker process runs at once, all accounts together. */
    workerBlocks: number;
    /** Bytes of answers one worker process holds while reading them, all calls together. */
    answerBufferBytes: number;
  };
  /** A worker in its own process serves /metrics here (the API serves its own). */
  worker: {
    metricsPort?: number;
    sdkMetricsPort?: number;
    shutdownGraceMs: number;
    workflowBundlePath?: string;
    /** V8's heap growing percent in the worker process (0: V8's own). */
    heapGrowingPercent: number;
  };
  /** D32: encryption of every Temporal payload, and the codec server operators decode them through. */
  codec: {
    /** False only for measurements (PAYLOAD_ENCRYPTION=false): no codec, plaintext payloads. */
    enabled: boolean;
    /**
     * Oldest first; the last encrypts, every one decrypts. Empty (never in production): the API
     * and the workers share a random development key kept in MongoDB (lib/codec/keys.ts).
     */
    keys: PayloadKey[];
    /** Bearer token of /codec/decode and /codec/encode; unset: both refuse every request. */
    token?: string;
    /** Origins (the Temporal UI's) whose browsers may call the codec server. */
    corsOrigins: string[];
  };
  /** OpenTelemetry traces (lib/observability/tracing.ts); no endpoint: off. */
  tracing: { otlpEndpoint?: string };
  /**
   * What the environment sets that has no effect, each a sentence for the log: every process logs
   * them at start (configurationWarnings). Not refused, as a contradiction is (checkCombinations):
   * a developer's shell may well export OPENAI_API_KEY for other tools.
   */
  warnings: string[];
}

/**
 * Any variable X can instead be given as X_FILE, the path of a file holding its value
 * (Docker and Kubernetes secrets). Read once, here; one trailing newline is dropped. Setting both is an error.
 */
export function resolveFileVariables(
  env: Record<string, string | undefined>,
): Record<string, string | undefined> {
  const resolved = { ...env };
  const problems: string[] = [];
  for (const name of Object.keys(EnvSchema.shape)) {
    const file = env[`${name}_FILE`];
    if (!file) continue;
    if (env[name] !== undefined) {
      problems.push(`  ${name}: set either ${name} or ${name}_FILE, not both`);
      continue;
    }
    try {
      resolved[name] = fs.readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      problems.push(
        `  ${name}_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      );
    }
  }
  if (problems.length) throw new Error(`Invalid configuration:\n${problems.join('\n')}`);
  return resolved;
}

/** Parses the environment once at start-up; throws a readable error naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = EnvSchema.safeParse(resolveFileVariables(env));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  checkCombinations(e);
  return { ...settings(e), warnings: configurationWarnings(e) };
}

/** Settings that have no effect (Config.warnings). */
function configurationWarnings(e: z.infer<typeof EnvSchema>): string[] {
  const warnings: string[] = [];
  if (e.OPENAI_API_KEY && !e.OPENAI_BASE_URL && !e.PROVIDERS.openai)
    // The `openai` provider is made from OPENAI_BASE_URL (settings): without it the key is dropped, and
    // every llm run is refused (model_not_offered) or fails for want of a provider.
    warnings.push(
      'OPENAI_API_KEY is set without OPENAI_BASE_URL: it is ignored and no `openai` provider is configured (set OPENAI_BASE_URL, e.g. https://api.openai.com/v1)',
    );
  return warnings;
}

/** Rules across variables, and what production requires: each a readable error. */
function checkCombinations(e: z.infer<typeof EnvSchema>): void {
  if (Boolean(e.TLS_CERT_FILE) !== Boolean(e.TLS_KEY_FILE)) {
    throw new Error('Invalid configuration:\n  TLS_CERT_FILE and TLS_KEY_FILE go together');
  }
  if (Boolean(e.TEMPORAL_TLS_CERT_FILE) !== Boolean(e.TEMPORAL_TLS_KEY_FILE)) {
    throw new Error(
      'Invalid configuration:\n  TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE go together',
    );
  }
  if (e.NODE_ENV === 'production' && !e.FILE_URL_SECRET) {
    // D19: links signed by one process must verify in every other; a per-database default is for development only.
    throw new Error(
      'Invalid configuration:\n  FILE_URL_SECRET is required when NODE_ENV=production (at least 32 random characters)',
    );
  }
  if (e.API_REQUEST_TIMEOUT_MS > 0 && e.API_HEADERS_TIMEOUT_MS > e.API_REQUEST_TIMEOUT_MS) {
    // Node refuses a headers timeout longer than the whole request's.
    throw new Error(
      'Invalid configuration:\n  API_HEADERS_TIMEOUT_MS must not exceed API_REQUEST_TIMEOUT_MS',
    );
  }
  if (!temporalAddresses(e).length)
    throw new Error('Invalid configuration:\n  TEMPORAL_ADDRESS: names no address');
  if (
    e.NODE_ENV === 'production' &&
    (e.PAYLOAD_KEYS.length === 0 || e.PAYLOAD_ENCRYPTION === 'false')
  ) {
    // D32: every process must encrypt with the same key; a per-database default is for development only.
    throw new Error(
      'Invalid configuration:\n  PAYLOAD_KEYS is required, and PAYLOAD_ENCRYPTION cannot be false, when NODE_ENV=production (see docs/deploy.md)',
    );
  }
  if (e.NODE_ENV === 'production' && e.ALLOW_PRIVATE_NETWORK) {
    // D19: it turns the SSRF guard off for URL inputs, http_request nodes and provider answers, so
    // any caller or provider could reach the internal network and the cloud metadata service.
    // WEBHOOK_ALLOW_PRIVATE_NETWORK stays allowed: an internal webhook receiver is an operator's choice.
    throw new Error(
      'Invalid configuration:\n  ALLOW_PRIVATE_NETWORK cannot be true when NODE_ENV=production: it turns the SSRF guard off for URL inputs, http_request nodes and provider answers (tests only; name internal hosts in ALLOW_PRIVATE_HOSTS instead)',
    );
  }
}

/** The parsed environment as the Config tree. */
// eslint-disable-next-line max-lines-per-function -- one flat table of settings: splitting it hides the list
function settings(e: z.infer<typeof EnvSchema>): Omit<Config, 'warnings'> {
  const providers: Record<string, Provider> = { ...e.PROVIDERS };
  if (e.OPENAI_BASE_URL && !providers.openai) {
    providers.openai = { kind: 'openai', base_url: e.OPENAI_BASE_URL, api_key: e.OPENAI_API_KEY };
  }
  return {
    api: {
      host: e.API_HOST,
      port: e.API_PORT,
      publicBaseUrl: e.PUBLIC_BASE_URL,
      playgroundBundleDir: e.PLAYGROUND_BUNDLE_DIR,
      tls:
        e.TLS_CERT_FILE && e.TLS_KEY_FILE
          ? { certFile: e.TLS_CERT_FILE, keyFile: e.TLS_KEY_FILE }
          : undefined,
      maxJsonBodyBytes: e.MAX_JSON_BODY_BYTES,
      maxJsonDepth: e.MAX_JSON_DEPTH,
      workflowStorageMaxBytes: e.WORKFLOW_STORAGE_MAX_BYTES,
      queryTimeoutMs: e.QUERY_TIMEOUT_MS,
      finishedRunCacheMs: e.FINISHED_RUN_CACHE_MS,
      stream: {
        pollMs: e.STREAM_POLL_MS,
        keepaliveMs: e.STREAM_KEEPALIVE_MS,
        maxBufferedBytes: e.STREAM_MAX_BUFFERED_BYTES,
        maxPerKey: e.STREAM_MAX_PER_KEY,
      },
      downloadMaxPerKey: e.DOWNLOAD_MAX_PER_KEY,
      timeouts: {
        headersMs: e.API_HEADERS_TIMEOUT_MS,
        requestMs: e.API_REQUEST_TIMEOUT_MS,
        idleMs: e.API_IDLE_TIMEOUT_MS,
      },
      shutdown: { delayMs: e.API_SHUTDOWN_DELAY_MS, graceMs: e.API_SHUTDOWN_GRACE_MS },
      rateLimits: {
        startsPerMinute: e.RATE_LIMIT_STARTS_PER_MINUTE,
        requestsPerMinute: e.RATE_LIMIT_REQUESTS_PER_MINUTE,
      },
    },
    temporal: {
      address: temporalAddresses(e)[0],
      namespace: e.TEMPORAL_NAMESPACE,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      rpcTimeoutMs: e.TEMPORAL_RPC_TIMEOUT_MS,
      addresses: temporalAddresses(e),
      tls: temporalTls(e),
      apiKey: e.TEMPORAL_API_KEY || undefined,
    },
    mongo: {
      uri: e.MONGODB_URI,
      dbName: e.MONGODB_DB,
      serverSelectionTimeoutMs: e.MONGODB_SERVER_SELECTION_TIMEOUT_MS,
      connectTimeoutMs: e.MONGODB_CONNECT_TIMEOUT_MS,
      socketTimeoutMs: e.MONGODB_SOCKET_TIMEOUT_MS,
    },
    providers,
    prices: e.PRICES,
    credits: { holdPerCallUsd: e.CREDIT_HOLD_PER_CALL_USD, unpricedModels: e.UNPRICED_MODELS },
    runs: {
      concurrency: e.RUN_CONCURRENCY,
      maxConcurrency: e.RUN_MAX_CONCURRENCY,
      startFeeUsd: e.START_FEE_USD,
      runTimeoutMs: e.RUN_TIMEOUT_MS,
      nodeAttemptTimeoutMs: e.NODE_ATTEMPT_TIMEOUT_MS,
      nodeMaxAttempts: e.NODE_MAX_ATTEMPTS,
      retryInitialMs: e.RETRY_INITIAL_MS,
      webhookRetryInitialMs: e.WEBHOOK_RETRY_INITIAL_MS,
    },
    files: {
      maxBytes: e.MAX_UPLOAD_BYTES,
      storageMaxBytes: e.FILE_STORAGE_MAX_BYTES,
      urlSecret: e.FILE_URL_SECRET,
      urlTtlSeconds: e.FILE_URL_TTL_SECONDS,
      fetchTimeoutMs: e.FILE_FETCH_TIMEOUT_MS,
      allowHttpUrls: e.ALLOW_HTTP_URLS,
      allowPrivateNetwork: e.ALLOW_PRIVATE_NETWORK,
      allowPrivateHosts: e.ALLOW_PRIVATE_HOSTS.split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
      maxAnswerBytes: e.MAX_ANSWER_BYTES,
    },
    predictions: { pollMs: e.MODEL_POLL_MS },
    webhooks: {
      allowHttp: e.WEBHOOK_ALLOW_HTTP,
      allowPrivateNetwork: e.WEBHOOK_ALLOW_PRIVATE_NETWORK,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      workerDeliveries: e.WORKER_WEBHOOK_DELIVERIES,
    },
    retention: { days: e.RETENTION_DAYS },
    logLevel: e.LOG_LEVEL,
    providerCalls: {
      workerSlots: e.WORKER_PROVIDER_CALLS,
      accountCap: e.ACCOUNT_MAX_PROVIDER_CALLS,
      lagTargetMs: e.WORKER_CALL_LAG_TARGET_MS,
      sharedLagTargetMs: e.WORKER_CALL_LAG_TARGET_SHARED_MS,
      workerBlocks: e.WORKER_BLOCKS,
      answerBufferBytes: e.WORKER_ANSWER_BUFFER_BYTES,
    },
    worker: {
      metricsPort: e.WORKER_METRICS_PORT,
      sdkMetricsPort: e.WORKER_SDK_METRICS_PORT,
      shutdownGraceMs: e.WORKER_SHUTDOWN_GRACE_MS,
      workflowBundlePath: e.WORKFLOW_BUNDLE_PATH,
      heapGrowingPercent: e.WORKER_HEAP_GROWING_PERCENT,
    },
    codec: {
      enabled: e.PAYLOAD_ENCRYPTION === 'true',
      keys: e.PAYLOAD_KEYS,
      token: e.CODEC_TOKEN,
      corsOrigins: e.CODEC_CORS_ORIGINS.split(',')
        .map((o) => o.trim())
        .filter(Boolean),
    },
    tracing: { otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT },
  };
}

/** The Temporal frontend addresses TEMPORAL_ADDRESS lists (comma-separated). */
function temporalAddresses(e: z.infer<typeof EnvSchema>): string[] {
  return e.TEMPORAL_ADDRESS.split(',')
    .map((a) => a.trim())
    .filter(Boolean);
}

/** TLS settings of the Temporal connection: on when asked for, or implied by a CA, a client certificate or an API key. */
function temporalTls(e: z.infer<typeof EnvSchema>): Config['temporal']['tls'] {
  const on =
    e.TEMPORAL_TLS ||
    Boolean(e.TEMPORAL_TLS_CA_FILE || e.TEMPORAL_TLS_CERT_FILE || e.TEMPORAL_API_KEY);
  if (!on) return undefined;
  return {
    caFile: e.TEMPORAL_TLS_CA_FILE,
    certFile: e.TEMPORAL_TLS_CERT_FILE,
    keyFile: e.TEMPORAL_TLS_KEY_FILE,
    serverName: e.TEMPORAL_TLS_SERVER_NAME,
  };
}
