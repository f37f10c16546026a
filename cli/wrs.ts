/**
 * Operator CLI entry (D27): `npm run cli -- <command>`. Reads the environment here, connects
 * to the service's MongoDB only when a command needs it, and leaves the rest to runCli.
 */
import { loadConfig } from '../config';
import { connectStore, type Store } from '../store/db';
import { runCli } from './run-cli';

async function main(): Promise<number> {
  let store: Store | undefined;
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const err = (line: string) => process.stderr.write(`${line}\n`);
  try {
    return await runCli(process.argv.slice(2), {
      out,
      err,
      collections: async () => {
        const config = loadConfig(process.env);
        store = await connectStore({
          uri: config.mongo.uri,
          dbName: config.mongo.dbName,
          appName: 'wrs-cli',
        });
        return store.collections;
      },
    });
  } finally {
    await store?.close().catch(() => undefined);
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
