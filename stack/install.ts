// Builds (if missing) and prints the Temporal CLI and FerretDB binaries, and installs schemathesis (a Python
// tool the reliability tests run) and the Python client's test venv into the same cache: `tsx stack/install.ts`. CI runs this.
import { defaultCacheDir, ensureFerretDb, ensureTemporal } from './binaries';
import { ensurePythonClientEnv, ensureSchemathesis } from './python-tools';

async function main(): Promise<void> {
  const log = (line: string): void => {
    if (line.trim()) process.stderr.write(`${line}\n`);
  };
  const cacheDir = defaultCacheDir();
  // Sequential: two parallel Go builds mostly fight over CPU and make the output unreadable.
  const temporal = await ensureTemporal({ cacheDir, log });
  const ferretdb = await ensureFerretDb({ cacheDir, log });
  const schemathesis = await ensureSchemathesis({ cacheDir, log });
  const pythonClient = await ensurePythonClientEnv({ cacheDir, log });
  process.stdout.write(`temporal ${temporal}\nferretdb ${ferretdb}\nschemathesis ${[schemathesis.command, ...schemathesis.args].join(' ')}\npython-client ${pythonClient}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
