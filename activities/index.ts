/** Every activity of the worker, built with its dependencies injected so tests construct what they need. */
import type { Db } from 'mongodb';
import type { Config } from '../config';
import { FileLinks } from '../lib/files/links';
import type { Collections } from '../store/db';
import { fileQuota } from '../store/storage-quota';
import { invalidNodeConfig } from './failures';
import { createFileInputActivity } from './file-input';
import type { FileDeps } from './files';
import { createFinalizeActivity, createSaveRunChunkActivity } from './finalize';
import { createExtendHoldActivity } from './credit';
import { createHttpRequestActivity } from './http-request';
import { createImageGenerationActivity } from './image-generation';
import { createLlmActivity } from './llm';
import { createModelActivity } from './model';
import { createNodeChunkActivity } from './node-chunk';
import { createNodeBlockActivity, createTallyBlockActivity, workerBlockSlots } from './node-block';
import { CallScheduler } from './call-scheduler';
import { ReadBudget } from '../lib/net/read-budget';
import { createFileRowsActivity } from './file-rows';
import { createStoredListActivities } from './stored-lists';
import { createLoadCarryOverActivity } from './carry-over';
import type { OutboundGuard } from './provider-http';
import {
  DEFAULT_PROVIDER_CALLS,
  scheduledExecutors,
  type ProviderCallLimits,
} from './provider-calls';
import { createRetentionActivity } from './retention';
import { createWebhookActivities, type WebhookDeps } from './webhook';

export interface ActivityDeps {
  collections: Collections;
  /** The database of the GridFS `files` bucket (D19); a worker without it (unit tests of other activities) cannot store files. */
  db?: Db;
  config: Pick<Config, 'providers' | 'prices'> &
    Partial<
      Pick<Config, 'api' | 'files' | 'predictions' | 'webhooks' | 'retention' | 'providerCalls'>
    >;
  /** Host resolution of the SSRF guard (lib/net/ssrf.ts: webhooks, http_request nodes, provider answers); the system resolver otherwise. */
  resolve?: WebhookDeps['resolve'];
}

/**
 * The worker's outbound guards: of provider calls and the URLs in their answers (a provider's
 * configured origin is trusted, anything else checked as a URL input's host is: ALLOW_PRIVATE_NETWORK,
 * ALLOW_PRIVATE_HOSTS), and of http_request nodes (the URL inputs' ALLOW_PRIVATE_NETWORK). One
 * budget holds every answer either reads into memory (WORKER_ANSWER_BUFFER_BYTES).
 */
function outboundGuards(
  deps: ActivityDeps,
  limits: ProviderCallLimits,
): { providers: OutboundGuard; requests: OutboundGuard } {
  const files = deps.config.files;
  const shared = {
    allowPrivate: files?.allowPrivateNetwork ?? false,
    resolve: deps.resolve,
    maxAnswerBytes: files?.maxAnswerBytes,
    readBudget:
      limits.answerBufferBytes !== undefined ? new ReadBudget(limits.answerBufferBytes) : undefined,
  };
  return { providers: { ...shared, allowedHosts: files?.allowPrivateHosts }, requests: shared };
}

/** The activities object registered on a worker. */
export function createActivities(deps: ActivityDeps) {
  const { api, files: filesConfig } = deps.config;
  // Links made here point at PUBLIC_BASE_URL (else the API's own address): the worker has no request to take a host from.
  const fileDeps: FileDeps | undefined =
    deps.db && api && filesConfig
      ? {
          db: deps.db,
          links: new FileLinks({ api, files: filesConfig }, deps.db),
          collections: deps.collections,
          config: { files: filesConfig },
          quota: fileQuota({ db: deps.db, collections: deps.collections }, filesConfig),
        }
      : undefined;
  const files = (): FileDeps => {
    if (!fileDeps) throw invalidNodeConfig('this worker has no file storage configured');
    return fileDeps;
  };
  const limits = deps.config.providerCalls ?? DEFAULT_PROVIDER_CALLS;
  const { providers, requests } = outboundGuards(deps, limits);
  const llm = createLlmActivity({ config: deps.config, guard: providers });
  const httpRequest = createHttpRequestActivity({ files, guard: requests });
  const imageGeneration = createImageGenerationActivity({
    config: deps.config,
    files,
    guard: providers,
  });
  const model = createModelActivity({
    config: deps.config,
    pollMs: deps.config.predictions?.pollMs,
    files,
    guard: providers,
  });
  // D36: the rows of chunks and blocks (every node row of a run) wait for a slot of this worker's
  // provider-call scheduler: shared round-robin between accounts, by priority within one.
  const { executors } = scheduledExecutors(
    { llm, http_request: httpRequest, image_generation: imageGeneration, model },
    deps.collections,
    limits,
  );
  return {
    // D35: a big node's blocks of rows, read from and written to the store.
    runNodeBlock: createNodeBlockActivity(
      executors,
      deps.collections,
      new CallScheduler({
        slots: workerBlockSlots(limits),
        capOf: () => Infinity, // round-robin between accounts is the only share
      }),
      // D19: the items of big runs count against the account's storage, beside its files.
      fileDeps?.quota,
    ),
    tallyBlock: createTallyBlockActivity(deps.collections),
    // D38: what a re-run of failed items carries over from its parent.
    loadCarryOver: createLoadCarryOverActivity(deps.collections),
    loadFileRows: createFileRowsActivity({ files, collections: deps.collections }),
    // D35: `select`, `join` and `batch` of a stored list; what they store counts like a block's items.
    ...createStoredListActivities(deps.collections, fileDeps?.quota),
    // Small nodes use runNodeChunk; the single-row activities stay registered for direct use (tests, tools).
    runNodeChunk: createNodeChunkActivity(executors),
    llm,
    httpRequest,
    imageGeneration,
    model,
    resolveFileInput: createFileInputActivity({ files }),
    saveRunChunk: createSaveRunChunkActivity({ collections: deps.collections }),
    finalizeRun: createFinalizeActivity({ collections: deps.collections }),
    // D17: a run capped at its hold asks for more as it works.
    extendRunHold: createExtendHoldActivity({ collections: deps.collections }),
    ...createWebhookActivities({
      collections: deps.collections,
      webhooks: deps.config.webhooks,
      resolve: deps.resolve,
    }),
    applyRetention: createRetentionActivity({
      collections: deps.collections,
      db: deps.db,
      config: deps.config,
    }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
