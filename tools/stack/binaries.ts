import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Temporal CLI version; later versions cannot be `go install`ed (replace directives). */
export const TEMPORAL_CLI_VERSION = '1.5.1';
/** FerretDB version; the last 1.x line still has the SQLite handler. */
export const FERRETDB_VERSION = '1.24.2';

/** Helm version that renders and lints deploy/helm in CI (test/deploy). */
export const HELM_VERSION = '3.22.0';
/** kubeconform version that validates the rendered chart against the Kubernetes JSON schemas. */
export const KUBECONFORM_VERSION = '0.8.0';
/**
 * Prometheus release whose promtool checks and unit-tests deploy/prometheus (test/deploy): the Go module version
 * of the `prom/prometheus:v3.5.0` image Compose runs (Prometheus 3.x tags its module v0.3xx.y).
 */
export const PROMTOOL_VERSION = '0.305.0';
/** Alertmanager release of the Compose file's `prom/alertmanager:v0.28.1` (test/deploy's end-to-end alert check). */
export const ALERTMANAGER_VERSION = '0.28.1';

const TEMPORAL_MODULE = 'github.com/temporalio/cli/cmd/temporal';
const HELM_MODULE = 'helm.sh/helm/v3/cmd/helm';
const KUBECONFORM_MODULE = 'github.com/yannh/kubeconform/cmd/kubeconform';
const PROMETHEUS_MODULE = 'github.com/prometheus/prometheus';
const ALERTMANAGER_MODULE = 'github.com/prometheus/alertmanager';
const FERRETDB_MODULE = 'github.com/FerretDB/FerretDB';
const TEMPORAL_SERVER_MODULE = 'go.temporal.io/server';

/**
 * The production Temporal server release Compose runs (`temporalio/server:1.29.1`, the same server the dev server
 * of Temporal CLI 1.5.1 embeds). test/deploy builds the server and its SQL schema tool from this module version
 * as stand-ins for the `temporalio/server` and `temporalio/admin-tools` images.
 */
export const TEMPORAL_SERVER_VERSION = '1.29.1';

export interface EnsureOptions {
  /** Where built binaries live; defaults to `defaultCacheDir()`. */
  cacheDir?: string;
  /** Receives progress lines (build output); silent when omitted. */
  log?: (line: string) => void;
}

/** The shared binary cache, `~/.cache/wrs`. */
export function defaultCacheDir(): string {
  return path.join(os.homedir(), '.cache', 'wrs');
}

/** Path where the Temporal CLI binary lives (or will live) in the cache. */
export function temporalBinaryPath(cacheDir = defaultCacheDir()): string {
  return path.join(cacheDir, `temporal-${TEMPORAL_CLI_VERSION}`, 'temporal');
}

/** Path where the FerretDB binary lives (or will live) in the cache. */
export function ferretDbBinaryPath(cacheDir = defaultCacheDir()): string {
  return path.join(cacheDir, `ferretdb-${FERRETDB_VERSION}`, 'ferretdb');
}

/** Returns the Temporal CLI binary path, building it with `go install` only when it is missing. */
export async function ensureTemporal(opts: EnsureOptions = {}): Promise<string> {
  const target = temporalBinaryPath(opts.cacheDir);
  const log = opts.log ?? noop;
  return ensureBinary(target, log, async (tmpDir) => {
    log(`building Temporal CLI v${TEMPORAL_CLI_VERSION} with go install (takes a few minutes)`);
    // GOBIN points at a private temp dir so a concurrent or killed build never touches the real path.
    await runGo(['install', `${TEMPORAL_MODULE}@v${TEMPORAL_CLI_VERSION}`], {
      cwd: tmpDir,
      env: { GOBIN: tmpDir },
      log,
    });
    return path.join(tmpDir, 'temporal');
  });
}

/** Returns the FerretDB binary path, building it from the module source only when it is missing. */
export async function ensureFerretDb(opts: EnsureOptions = {}): Promise<string> {
  const target = ferretDbBinaryPath(opts.cacheDir);
  const log = opts.log ?? noop;
  return ensureBinary(target, log, async (tmpDir) => {
    log(`building FerretDB v${FERRETDB_VERSION} from source (takes a minute or two)`);
    // `go install ...@v1.24.2` fails (the proxy refuses the @v/list deprecation lookup), so fetch the module
    // source directly, then build it as a main module. An empty dir keeps any surrounding go.mod out of it.
    const dlDir = path.join(tmpDir, 'download');
    fs.mkdirSync(dlDir);
    const out = await runGo(
      ['mod', 'download', '-json', `${FERRETDB_MODULE}@v${FERRETDB_VERSION}`],
      { cwd: dlDir, log },
    );
    const info = JSON.parse(out) as { Dir?: string; Error?: string };
    if (!info.Dir)
      throw new Error(
        `go mod download ${FERRETDB_MODULE}@v${FERRETDB_VERSION} failed: ${info.Error ?? out}`,
      );

    // The module cache is read-only; copy it so build/version/version.txt can be written.
    const srcDir = path.join(tmpDir, 'src');
    fs.cpSync(info.Dir, srcDir, { recursive: true });
    makeWritable(srcDir);
    // Without this file the binary panics at start with "Invalid build/version/version.txt".
    fs.writeFileSync(
      path.join(srcDir, 'build', 'version', 'version.txt'),
      `v${FERRETDB_VERSION}\n`,
    );

    const bin = path.join(tmpDir, 'ferretdb');
    await runGo(['build', '-trimpath', '-buildvcs=false', '-o', bin, './cmd/ferretdb'], {
      cwd: srcDir,
      log,
    });
    return bin;
  });
}

/** Path where the helm binary lives (or will live) in the cache. */
export function helmBinaryPath(cacheDir = defaultCacheDir()): string {
  return path.join(cacheDir, `helm-${HELM_VERSION}`, 'helm');
}

/** Path where the kubeconform binary lives (or will live) in the cache. */
export function kubeconformBinaryPath(cacheDir = defaultCacheDir()): string {
  return path.join(cacheDir, `kubeconform-${KUBECONFORM_VERSION}`, 'kubeconform');
}

/** Returns the helm binary path, building it with `go install` only when it is missing (several minutes). */
export async function ensureHelm(opts: EnsureOptions = {}): Promise<string> {
  return goInstall(helmBinaryPath(opts.cacheDir), `${HELM_MODULE}@v${HELM_VERSION}`, opts);
}

/** Returns the kubeconform binary path, building it with `go install` only when it is missing. */
export async function ensureKubeconform(opts: EnsureOptions = {}): Promise<string> {
  return goInstall(
    kubeconformBinaryPath(opts.cacheDir),
    `${KUBECONFORM_MODULE}@v${KUBECONFORM_VERSION}`,
    opts,
  );
}

/** Path where the promtool binary lives (or will live) in the cache. */
export function promtoolBinaryPath(cacheDir = defaultCacheDir()): string {
  return path.join(cacheDir, `promtool-${PROMTOOL_VERSION}`, 'promtool');
}

/**
 * Returns the promtool binary path, building it only when it is missing. A large build (every service discovery
 * of Prometheus, 8 minutes on 2 busy cores), run at low priority so it does not starve the tests.
 */
export async function ensurePromtool(opts: EnsureOptions = {}): Promise<string> {
  return buildFromModuleSource(
    promtoolBinaryPath(opts.cacheDir),
    PROMETHEUS_MODULE,
    PROMTOOL_VERSION,
    './cmd/promtool',
    opts,
  );
}

/** Path where the Prometheus server binary (same release as promtool) lives in the cache. */
export function prometheusBinaryPath(cacheDir = defaultCacheDir()): string {
  return path.join(cacheDir, `prometheus-${PROMTOOL_VERSION}`, 'prometheus');
}

/** Returns the Prometheus server binary (for the end-to-end alert check), building it only when it is missing. */
export async function ensurePrometheus(opts: EnsureOptions = {}): Promise<string> {
  return buildFromModuleSource(
    prometheusBinaryPath(opts.cacheDir),
    PROMETHEUS_MODULE,
    PROMTOOL_VERSION,
    './cmd/prometheus',
    opts,
  );
}

/** Path where the Alertmanager binary lives in the cache. */
export function alertmanagerBinaryPath(cacheDir = defaultCacheDir()): string {
  return path.join(cacheDir, `alertmanager-${ALERTMANAGER_VERSION}`, 'alertmanager');
}

/** Returns the Alertmanager binary (for the end-to-end alert check), building it only when it is missing. */
export async function ensureAlertmanager(opts: EnsureOptions = {}): Promise<string> {
  return buildFromModuleSource(
    alertmanagerBinaryPath(opts.cacheDir),
    ALERTMANAGER_MODULE,
    ALERTMANAGER_VERSION,
    './cmd/alertmanager',
    opts,
  );
}

/** Path where the production Temporal server binary (not the CLI's dev server) lives in the cache. */
export function temporalServerBinaryPath(cacheDir = defaultCacheDir()): string {
  return path.join(cacheDir, `temporal-server-${TEMPORAL_SERVER_VERSION}`, 'temporal-server');
}

/** Path where Temporal's SQL schema tool (`temporal-sql-tool` of the admin-tools image) lives in the cache. */
export function temporalSqlToolBinaryPath(cacheDir = defaultCacheDir()): string {
  return path.join(cacheDir, `temporal-server-${TEMPORAL_SERVER_VERSION}`, 'temporal-sql-tool');
}

/** The server module's schema directory (`schema/postgresql/v12/...`), as the admin-tools image ships it. */
export async function temporalServerSchemaDir(opts: EnsureOptions = {}): Promise<string> {
  // An empty working dir keeps any surrounding go.mod out of the download.
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-go-'));
  try {
    const dir = await downloadModule(
      TEMPORAL_SERVER_MODULE,
      TEMPORAL_SERVER_VERSION,
      cwd,
      opts.log ?? noop,
    );
    return path.join(dir, 'schema');
  } finally {
    fs.rmSync(cwd, { recursive: true, force: true });
  }
}

/** Returns the production Temporal server binary, building it (cmd/server, at nice 15) only when it is missing. */
export async function ensureTemporalServer(opts: EnsureOptions = {}): Promise<string> {
  return buildFromModuleSource(
    temporalServerBinaryPath(opts.cacheDir),
    TEMPORAL_SERVER_MODULE,
    TEMPORAL_SERVER_VERSION,
    './cmd/server',
    opts,
  );
}

/** Returns `temporal-sql-tool` (cmd/tools/sql), the schema tool the Compose jobs run, building it only when missing. */
export async function ensureTemporalSqlTool(opts: EnsureOptions = {}): Promise<string> {
  return buildFromModuleSource(
    temporalSqlToolBinaryPath(opts.cacheDir),
    TEMPORAL_SERVER_MODULE,
    TEMPORAL_SERVER_VERSION,
    './cmd/tools/sql',
    opts,
  );
}

/** `go mod download` of one module version into the module cache; returns its (read-only) source directory. */
async function downloadModule(
  module: string,
  version: string,
  cwd: string,
  log: (line: string) => void,
): Promise<string> {
  const out = await runGo(['mod', 'download', '-json', `${module}@v${version}`], { cwd, log });
  const info = JSON.parse(out) as { Dir?: string; Error?: string };
  if (!info.Dir)
    throw new Error(`go mod download ${module}@v${version} failed: ${info.Error ?? out}`);
  return info.Dir;
}

/** Path where amtool (Alertmanager's configuration checker, same release) lives in the cache. */
export function amtoolBinaryPath(cacheDir = defaultCacheDir()): string {
  return path.join(cacheDir, `amtool-${ALERTMANAGER_VERSION}`, 'amtool');
}

/** Returns amtool (`amtool check-config` of deploy/alertmanager), building it only when it is missing. */
export async function ensureAmtool(opts: EnsureOptions = {}): Promise<string> {
  return buildFromModuleSource(
    amtoolBinaryPath(opts.cacheDir),
    ALERTMANAGER_MODULE,
    ALERTMANAGER_VERSION,
    './cmd/amtool',
    opts,
  );
}

/**
 * Builds `pkg` of `module@v<version>` into `target` at nice 15: `go install module/pkg@version` refuses the
 * Prometheus modules (their go.mod has replace directives), so the module source is downloaded and the command
 * built inside it as the main module, with its own go.mod and go.sum.
 */
function buildFromModuleSource(
  target: string,
  module: string,
  version: string,
  pkg: string,
  opts: EnsureOptions,
): Promise<string> {
  const log = opts.log ?? noop;
  return ensureBinary(target, log, async (tmpDir) => {
    log(`building ${pkg} of ${module} v${version} from the module source`);
    const dlDir = path.join(tmpDir, 'download');
    fs.mkdirSync(dlDir);
    const out = await runGo(['mod', 'download', '-json', `${module}@v${version}`], {
      cwd: dlDir,
      log,
    });
    const info = JSON.parse(out) as { Dir?: string; Error?: string };
    if (!info.Dir)
      throw new Error(`go mod download ${module}@v${version} failed: ${info.Error ?? out}`);
    const bin = path.join(tmpDir, path.basename(target));
    await runGo(['build', '-trimpath', '-buildvcs=false', '-o', bin, pkg], {
      cwd: info.Dir,
      log,
      nice: true,
    });
    return bin;
  });
}

/** The Go program that loads a Compose file with compose-go (its source and go.sum pin every dependency). */
const COMPOSE_CHECK_SRC = path.join(__dirname, 'compose-check');

/** Path of the compose-check binary in the cache, keyed by a hash of its source so an edit rebuilds it. */
export function composeCheckBinaryPath(cacheDir = defaultCacheDir()): string {
  const hash = createHash('sha256');
  for (const name of ['main.go', 'go.mod', 'go.sum'])
    hash.update(fs.readFileSync(path.join(COMPOSE_CHECK_SRC, name)));
  return path.join(cacheDir, `compose-check-${hash.digest('hex').slice(0, 12)}`, 'compose-check');
}

/** Returns the compose-check binary (stack/compose-check), building it with Go only when it is missing (about a minute). */
export async function ensureComposeCheck(opts: EnsureOptions = {}): Promise<string> {
  const log = opts.log ?? noop;
  return ensureBinary(composeCheckBinaryPath(opts.cacheDir), log, async (tmpDir) => {
    log('building stack/compose-check (compose-go) with go build');
    const bin = path.join(tmpDir, 'compose-check');
    await runGo(['build', '-trimpath', '-o', bin, '.'], { cwd: COMPOSE_CHECK_SRC, log });
    return bin;
  });
}

/** `go install module@version` into a private GOBIN, then moved to `target` under the build-once lock. */
function goInstall(
  target: string,
  moduleAtVersion: string,
  opts: EnsureOptions & { nice?: boolean },
): Promise<string> {
  const log = opts.log ?? noop;
  return ensureBinary(target, log, async (tmpDir) => {
    log(`building ${moduleAtVersion} with go install`);
    await runGo(['install', moduleAtVersion], {
      cwd: tmpDir,
      env: { GOBIN: tmpDir },
      log,
      nice: opts.nice,
    });
    return path.join(tmpDir, path.basename(target));
  });
}

function noop(): void {}

/**
 * Shared build-once logic: fast path when the binary exists; otherwise take a lock dir, build into a temp dir
 * next to the target (same filesystem) and rename into place, so readers only ever see a complete binary.
 */
async function ensureBinary(
  target: string,
  log: (line: string) => void,
  build: (tmpDir: string) => Promise<string>,
): Promise<string> {
  if (isExecutable(target)) return target;
  const dir = path.dirname(target);
  fs.mkdirSync(dir, { recursive: true });
  const lockDir = `${target}.lock`;

  // False means another process finished the build while we waited: nothing to do and no lock to release.
  if (!(await acquireLock(lockDir, target, log))) return target;
  try {
    // Another process may have finished the build while we waited for the lock.
    if (isExecutable(target)) return target;
    // Only the lock holder creates build dirs, so any present now were left by a killed build.
    for (const name of fs.readdirSync(dir)) {
      if (name.startsWith('.build-'))
        fs.rmSync(path.join(dir, name), { recursive: true, force: true });
    }
    const tmpDir = path.join(dir, `.build-${process.pid}-${randomBytes(4).toString('hex')}`);
    fs.mkdirSync(tmpDir);
    try {
      const built = await build(tmpDir);
      fs.chmodSync(built, 0o755);
      fs.renameSync(built, target);
      log(`built ${target}`);
    } finally {
      fs.rmSync(tmpDir, { recursive: true, force: true });
    }
    return target;
  } finally {
    fs.rmSync(lockDir, { recursive: true, force: true });
  }
}

/** mkdir is atomic, so a lock dir holding the owner's pid is enough to serialise builds across processes. */
async function acquireLock(
  lockDir: string,
  target: string,
  log: (line: string) => void,
): Promise<boolean> {
  let announced = false;
  for (;;) {
    try {
      fs.mkdirSync(lockDir);
      fs.writeFileSync(path.join(lockDir, 'pid'), String(process.pid));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (isExecutable(target)) return false;
    if (isStaleLock(lockDir)) {
      log(`removing stale build lock ${lockDir}`);
      fs.rmSync(lockDir, { recursive: true, force: true });
      continue;
    }
    if (!announced) {
      log(`waiting for another process building ${target}`);
      announced = true;
    }
    await sleep(1000);
  }
}

/** A lock is stale when its owner pid is gone (a killed build), or it has no pid file long after creation. */
function isStaleLock(lockDir: string): boolean {
  let pidText: string;
  try {
    pidText = fs.readFileSync(path.join(lockDir, 'pid'), 'utf8');
  } catch {
    try {
      // The owner writes the pid right after mkdir; a pid-less lock older than a minute was abandoned.
      return Date.now() - fs.statSync(lockDir).mtimeMs > 60_000;
    } catch {
      return true; // lock vanished between checks
    }
  }
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function makeWritable(dir: string): void {
  fs.chmodSync(dir, fs.statSync(dir).mode | 0o200);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) makeWritable(p);
    else if (entry.isFile()) fs.chmodSync(p, fs.statSync(p).mode | 0o200);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs `go` with the given args; resolves with stdout, streams stderr lines to `log`, rejects with the stderr tail. */
function runGo(
  args: string[],
  opts: { cwd: string; env?: Record<string, string>; log: (line: string) => void; nice?: boolean },
): Promise<string> {
  return new Promise((resolve, reject) => {
    // `nice -n 15 go ...` (coreutils) for the large tool builds on a machine whose cores are shared.
    const [cmd, argv] = opts.nice ? ['nice', ['-n', '15', 'go', ...args]] : ['go', args];
    const child = spawn(cmd, argv, {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout: Buffer[] = [];
    const tail: string[] = [];
    let partial = '';
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        opts.log(line);
        tail.push(line);
        if (tail.length > 40) tail.shift();
      }
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') {
        reject(
          new Error(
            '`go` was not found on PATH; install Go (https://go.dev/dl/) so the Temporal CLI and FerretDB can be built',
          ),
        );
      } else {
        reject(err);
      }
    });
    child.on('close', (code, signal) => {
      if (partial) tail.push(partial);
      if (code === 0) resolve(Buffer.concat(stdout).toString('utf8'));
      else
        reject(
          new Error(
            `go ${args.join(' ')} failed (${signal ?? `exit code ${code}`}):\n${tail.join('\n')}`,
          ),
        );
    });
  });
}
