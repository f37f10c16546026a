/** Every activity of the worker, built with its dependencies injected so tests construct what they need. */
import type { Config } from '../config';
import type { Collections } from '../store/db';
import { createFinalizeActivity } from './finalize';
import { createHttpRequestActivity } from './http-request';
import { createLlmActivity } from './llm';
import type { FetchFn } from './provider-http';

export interface ActivityDeps {
  collections: Collections;
  config: Pick<Config, 'providers' | 'prices'>;
  fetch?: FetchFn;
}

/** The activities object registered on a worker. */
export function createActivities(deps: ActivityDeps) {
  const fetchFn = deps.fetch ?? fetch;
  return {
    llm: createLlmActivity({ config: deps.config, fetch: fetchFn }),
    httpRequest: createHttpRequestActivity({ fetch: fetchFn }),
    finalizeRun: createFinalizeActivity({ collections: deps.collections }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
