/** Every activity of the worker, built with its dependencies injected so tests construct what they need. */
import type { Db } from 'mongodb';
import type { Config } from '../config';
import { FileLinks } from '../lib/files/links';
import type { Collections } from '../store/db';
import { invalidNodeConfig } from './failures';
import { createFileInputActivity } from './file-input';
import type { FileDeps } from './files';
import { createFinalizeActivity, createSaveRunChunkActivity } from './finalize';
import { createHttpRequestActivity } from './http-request';
import { createImageGenerationActivity } from './image-generation';
import { createLlmActivity } from './llm';
import { createModelActivity } from './model';
import { createNodeChunkActivity } from './node-chunk';
import { createNodeBlockActivity, createTallyBlockActivity } from './node-block';
import { createFileRowsActivity } from './file-rows';
import type { FetchFn } from './provider-http';
import { createRetentionActivity } from './retention';
import { createWebhookActivities, type WebhookDeps } from './webhook';

export interface ActivityDeps {
  collections: Collections;
  /** The database of the GridFS `files` bucket (D19); a worker without it (unit tests of other activities) cannot store files. */
  db?: Db;
  config: Pick<Config, 'providers' | 'prices'> &
    Partial<Pick<Config, 'api' | 'files' | 'predictions' | 'webhooks' | 'retention'>>;
  fetch?: FetchFn;
  /** Host resolution of webhook URLs (D20 SSRF guard); the system resolver otherwise. */
  resolve?: WebhookDeps['resolve'];
}

/** The activities object registered on a worker. */
export function createActivities(deps: ActivityDeps) {
  const fetchFn = deps.fetch ?? fetch;
  const { api, files: filesConfig } = deps.config;
  // Links made here point at PUBLIC_BASE_URL (else the API's own address): the worker has no request to take a host from.
  const fileDeps: FileDeps | undefined =
    deps.db && api && filesConfig
      ? {
          db: deps.db,
          links: new FileLinks({ api, files: filesConfig }, deps.db),
          collections: deps.collections,
          config: { files: filesConfig },
        }
      : undefined;
  const files = (): FileDeps => {
    if (!fileDeps) throw invalidNodeConfig('this worker has no file storage configured');
    return fileDeps;
  };
  const llm = createLlmActivity({ config: deps.config, fetch: fetchFn });
  // The SSRF guard of URL inputs (ALLOW_PRIVATE_NETWORK) covers http_request nodes too.
  const httpRequest = createHttpRequestActivity({
    files,
    guard: { allowPrivate: deps.config.files?.allowPrivateNetwork ?? false, resolve: deps.resolve },
  });
  const imageGeneration = createImageGenerationActivity({
    config: deps.config,
    files,
    fetch: fetchFn,
  });
  const model = createModelActivity({
    config: deps.config,
    pollMs: deps.config.predictions?.pollMs,
    files,
    fetch: fetchFn,
  });
  const executors = { llm, http_request: httpRequest, image_generation: imageGeneration, model };
  return {
    // D35: a big node's blocks of rows, read from and written to the store.
    runNodeBlock: createNodeBlockActivity(executors, deps.collections),
    tallyBlock: createTallyBlockActivity(deps.collections),
    loadFileRows: createFileRowsActivity({ files, collections: deps.collections }),
    // Small nodes use runNodeChunk; the single-row activities stay registered for direct use (tests, tools).
    runNodeChunk: createNodeChunkActivity(executors),
    llm,
    httpRequest,
    imageGeneration,
    model,
    resolveFileInput: createFileInputActivity({ files }),
    saveRunChunk: createSaveRunChunkActivity({ collections: deps.collections }),
    finalizeRun: createFinalizeActivity({ collections: deps.collections }),
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
