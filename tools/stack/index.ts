import path from 'node:path';
import { ensureFerretDb, ensureTemporal } from './binaries';
import { startFerretDb, type FerretDbServer } from './ferretdb-server';
import { startTemporal, type SearchAttributeType, type TemporalServer } from './temporal-server';

export * from './binaries';
export * from './ports';
export * from './process';
export * from './temporal-server';
export * from './ferretdb-server';
export * from './registry';

export interface StartStackOptions {
  /** Root data dir; Temporal uses `<dataDir>/temporal`, FerretDB `<dataDir>/ferretdb`. */
  dataDir: string;
  headless?: boolean;
  temporalPort?: number;
  uiPort?: number;
  mongoPort?: number;
  namespace?: string;
  searchAttributes?: Record<string, SearchAttributeType>;
  /** Binary cache dir; defaults to ~/.cache/wrs. */
  cacheDir?: string;
  log?: (line: string) => void;
}

export interface Stack {
  temporal: TemporalServer;
  mongo: FerretDbServer;
  /** Stops both servers (in parallel); idempotent. */
  stop(): Promise<void>;
}

/** Ensures both binaries, then starts Temporal and FerretDB in parallel; if either fails the other is stopped. */
export async function startStack(opts: StartStackOptions): Promise<Stack> {
  const ensureOpts = { cacheDir: opts.cacheDir, log: opts.log };
  const [temporalBin, ferretBin] = await Promise.all([
    ensureTemporal(ensureOpts),
    ensureFerretDb(ensureOpts),
  ]);
  const dataDir = path.resolve(opts.dataDir);

  const results = await Promise.allSettled([
    startTemporal({
      dataDir: path.join(dataDir, 'temporal'),
      port: opts.temporalPort,
      uiPort: opts.uiPort,
      headless: opts.headless,
      namespace: opts.namespace,
      searchAttributes: opts.searchAttributes,
      binary: temporalBin,
    }),
    startFerretDb({
      dataDir: path.join(dataDir, 'ferretdb'),
      port: opts.mongoPort,
      binary: ferretBin,
    }),
  ]);
  const [t, m] = results;
  if (t.status === 'rejected' || m.status === 'rejected') {
    // Don't leave the half that did start running.
    await Promise.all(results.map((r) => (r.status === 'fulfilled' ? r.value.stop() : undefined)));
    throw t.status === 'rejected' ? t.reason : (m as PromiseRejectedResult).reason;
  }
  const temporal = t.value;
  const mongo = m.value;
  opts.log?.(
    `temporal ${temporal.address}${temporal.uiUrl ? ` (UI ${temporal.uiUrl})` : ''}, mongo ${mongo.uri}`,
  );
  return {
    temporal,
    mongo,
    stop: async () => {
      await Promise.all([temporal.stop(), mongo.stop()]);
    },
  };
}
