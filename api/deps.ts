/**
 * What the routes are given: the API's dependencies (AppDeps, made by start-api.ts or a test) and
 * the per-process caches built from them (RouteDeps). Each route takes only the fields it uses
 * (its own *RouteDeps type), cut from RouteDeps by `only` in app.ts. Routes import this module;
 * it imports no route.
 */
import type { Db } from 'mongodb';
import type { Config } from '../config';
import type { Collections } from '../store/db';
import type { Logger } from './logger';
import type { RunGateway } from './temporal/run-gateway';
import type { PollerRegistry } from './stream/run-poller';
import type { KeyCap } from './limits/key-cap';
import { downloadCap } from './runs/download-cap';
import { streamCap } from './stream/stream-cap';
import { CreditCheck } from './limits/credit-check';
import { FinishedRunCache } from './runs/finished-run-cache';
import { RateCounter } from './limits/rate-counter';
import { KnownRuns } from './runs/known-runs';
import { RunWrites } from '../store/run-writes';
import { WorkflowCatalog } from './workflows/workflow-catalog';
import { KeyCache } from './auth/key-cache';
import { fileQuota, workflowQuota, type StorageQuota } from '../store/storage-quota';
import { Drain } from './drain';
import type { AuthenticateDeps } from './middleware/authenticate';
import type { RateLimitDeps } from './middleware/rate-limit';

export interface AppDeps {
  config: Config;
  db: Db;
  collections: Collections;
  gateway: RunGateway;
  pollers: PollerRegistry;
  logger: Logger;
  /** Per-process caches; createApp makes them when not given. */
  credits?: CreditCheck;
  finishedRuns?: FinishedRunCache;
  rateCounter?: RateCounter;
  keys?: KeyCache;
  catalog?: WorkflowCatalog;
  knownRuns?: KnownRuns;
  /** The group commit of run records at start (store/run-writes.ts). */
  runWrites?: RunWrites;
  streams?: KeyCap;
  /** D35: results-file downloads per key in this process. */
  downloads?: KeyCap;
  /** D19: what each account's uploads may still hold. */
  fileQuota?: StorageQuota;
  /** D26: what each account's published workflows may still hold. */
  workflowQuota?: StorageQuota;
  /** Set on SIGTERM (api/drain.ts): readiness fails, waits answer at once. */
  drain?: Drain;
}

/** The dependencies routes see: AppDeps with the per-process caches made. */
export type RouteDeps = AppDeps &
  Required<
    Pick<
      AppDeps,
      | 'credits'
      | 'finishedRuns'
      | 'rateCounter'
      | 'keys'
      | 'catalog'
      | 'knownRuns'
      | 'runWrites'
      | 'streams'
      | 'downloads'
      | 'fileQuota'
      | 'workflowQuota'
      | 'drain'
    >
  >;

/** What every authenticated route needs for its guards: the key check (D6), then the rate limit (D16). */
export type GuardDeps = AuthenticateDeps & RateLimitDeps;

/** A route's dependencies: just the named fields of RouteDeps (a route sees nothing else). */
export function only<K extends keyof RouteDeps>(deps: RouteDeps, ...keys: K[]): Pick<RouteDeps, K> {
  const picked = {} as Pick<RouteDeps, K>;
  for (const key of keys) picked[key] = deps[key];
  return picked;
}

/** AppDeps with every per-process cache made (those a test passed in are kept). */
export function routeDeps(appDeps: AppDeps): RouteDeps {
  return {
    ...appDeps,
    credits: appDeps.credits ?? new CreditCheck(appDeps.collections),
    finishedRuns:
      appDeps.finishedRuns ??
      new FinishedRunCache({ ttlMs: appDeps.config.api.finishedRunCacheMs }),
    rateCounter: appDeps.rateCounter ?? new RateCounter(appDeps.collections),
    // Store round trips of the hot paths (docs/architecture.md "Store round trips").
    keys: appDeps.keys ?? new KeyCache(appDeps.collections),
    catalog: appDeps.catalog ?? new WorkflowCatalog(appDeps.collections),
    knownRuns: appDeps.knownRuns ?? new KnownRuns(),
    runWrites: appDeps.runWrites ?? new RunWrites(appDeps.collections),
    // Open streams per key in this process (docs/api.md "Connections").
    streams: appDeps.streams ?? streamCap(appDeps.config.api.stream.maxPerKey),
    downloads: appDeps.downloads ?? downloadCap(appDeps.config.api.downloadMaxPerKey),
    fileQuota: appDeps.fileQuota ?? fileQuota(appDeps, appDeps.config.files),
    workflowQuota: appDeps.workflowQuota ?? workflowQuota(appDeps.collections, appDeps.config.api),
    drain: appDeps.drain ?? new Drain(),
  };
}
