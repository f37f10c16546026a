/**
 * Operator CLI entry (D27): `npm run cli -- <command>`. Reads the environment here, connects
 * to the service's MongoDB only when a command needs it, and leaves the rest to runCli.
 */
import { loadConfig } from '../config';
import { connectStore, type Store } from '../store/db';
import { runCli } from './run-cli';
import { temporalRunStopper, type RunStopper } from './run-stopper';

async function main(): Promise<number> {
  let store: Promise<Store> | undefined;
  let stopper: RunStopper | undefined;
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const err = (line: string) => process.stderr.write(`${line}\n`);
  try {
    return await runCli(process.argv.slice(2), {
      out,
      err,
      collections: async () => (await connect()).collections,
      db: async () => (await connect()).db,
      runStopper: async () =>
        (stopper = await temporalRunStopper(loadConfig(process.env).temporal)),
    });
  } finally {
    await (await store?.catch(() => undefined))?.close().catch(() => undefined);
    await stopper?.close().catch(() => undefined);
  }

  function connect(): Promise<Store> {
    const config = loadConfig(process.env);
    store ??= connectStore({
      uri: config.mongo.uri,
      dbName: config.mongo.dbName,
      appName: 'wrs-cli',
    });
    return store;
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`wrs: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
