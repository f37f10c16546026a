/**
 * The production Temporal of docker-compose.yml, run here without Docker: PostgreSQL from Debian's
 * packages (stand-in for the `postgres` image), the schema created and upgraded by the very shell
 * scripts of the Compose jobs `temporal-schema-setup`, `temporal-schema-upgrade` and
 * `temporal-namespace` (read from docker-compose.yml; only the host, port and schema path differ),
 * with `temporal-sql-tool` and the server built from the module at the version Compose pins
 * (stand-ins for `temporalio/admin-tools` and `temporalio/server`), and the server started with the
 * image's own configuration template (config/docker.yaml) and the Compose service's environment.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import {
  ensureTemporal,
  ensureTemporalServer,
  ensureTemporalSqlTool,
  temporalServerSchemaDir,
  type EnsureOptions,
} from './binaries';
import { freePort, isPortFree } from './ports';
import { spawnServer, waitForTcp, waitUntilReady, type ServerProcess } from './process';

const ROOT = path.join(__dirname, '..', '..');
const COMPOSE_FILE = path.join(ROOT, 'docker-compose.yml');
/** Debian 12's PostgreSQL (apt-get install postgresql); the Compose file runs postgres:16 (same wire protocol, schema plugin postgres12). */
const PG_BIN_ROOT = '/usr/lib/postgresql';

export interface Postgres {
  port: number;
  /** Unix socket directory (the superuser `postgres` connects there without a password). */
  socketDir: string;
  process: ServerProcess;
  stop(): Promise<void>;
}

/** The newest PostgreSQL bin directory installed from Debian's packages. */
export function postgresBinDir(): string {
  const versions = fs.existsSync(PG_BIN_ROOT)
    ? fs.readdirSync(PG_BIN_ROOT).filter((v) => /^\d+$/.test(v))
    : [];
  if (versions.length === 0)
    throw new Error('PostgreSQL is not installed: apt-get install postgresql (Debian packages)');
  return path.join(PG_BIN_ROOT, versions.sort((a, b) => Number(b) - Number(a))[0], 'bin');
}

/** Runs as the `postgres` OS user when this process is root (PostgreSQL refuses to run as root). */
function asPostgres(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0
    ? ['runuser', ['-u', 'postgres', '--', command, ...args]]
    : [command, args];
}

/**
 * A fresh PostgreSQL cluster in `dir` on 127.0.0.1:<free port>, with Temporal's role created by
 * deploy/compose/postgresql-init.sh, as the image's first start runs it.
 */
export async function startPostgres(opts: {
  dir: string;
  temporalUser: string;
  temporalPassword: string;
}): Promise<Postgres> {
  const bin = postgresBinDir();
  fs.mkdirSync(opts.dir, { recursive: true });
  const data = path.join(opts.dir, 'data');
  const socketDir = path.join(opts.dir, 'socket');
  fs.mkdirSync(socketDir, { recursive: true });
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
    fs.chmodSync(opts.dir, 0o755);
    fs.chownSync(opts.dir, uid, gid);
    fs.chownSync(socketDir, uid, gid);
  }
  // Local socket: trust (the superuser, for the init script); TCP: passwords (scram), as the image does.
  const [initCmd, initArgs] = asPostgres(path.join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    '--encoding=UTF8',
    '--locale=C',
  ]);
  execFileSync(initCmd, initArgs, { stdio: 'pipe' });
  const port = await freePort();
  const [cmd, args] = asPostgres(path.join(bin, 'postgres'), [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    socketDir,
    '-c',
    'listen_addresses=127.0.0.1',
    // A test database: durability is not what is measured.
    '-c',
    'fsync=off',
    '-c',
    'max_connections=200',
  ]);
  const proc = spawnServer({
    name: 'postgresql',
    command: cmd,
    args,
    logFile: path.join(opts.dir, 'postgresql.log'),
  });
  // An open port is not readiness: PostgreSQL listens while it is still starting up and refuses
  // sessions with "the database system is starting up" until then. pg_isready exits 0 only once
  // it accepts them (as Compose's healthcheck asks).
  const [isReady, isReadyArgs] = asPostgres(path.join(bin, 'pg_isready'), [
    '-h',
    socketDir,
    '-p',
    String(port),
    '-q',
  ]);
  await waitUntilReady(proc, () => run(isReady, isReadyArgs, process.env).then(() => undefined), {
    timeoutMs: 60_000,
  });
  await run('sh', [path.join(ROOT, 'deploy', 'compose', 'postgresql-init.sh')], {
    PATH: `${bin}:${process.env.PATH}`,
    PGHOST: socketDir,
    PGPORT: String(port),
    POSTGRES_USER: 'postgres',
    TEMPORAL_DB_USER: opts.temporalUser,
    TEMPORAL_DB_PASSWORD: opts.temporalPassword,
  });
  return { port, socketDir, process: proc, stop: () => proc.stop() };
}

/** The shell script of a Compose one-shot job (its `command`), with Compose's `$$` unescaped. */
export function composeJobScript(service: string): string {
  const doc = yaml.load(fs.readFileSync(COMPOSE_FILE, 'utf8')) as {
    services: Record<string, { command?: string[] }>;
  };
  const command = doc.services[service]?.command;
  if (!command || command.length !== 1) throw new Error(`${service}: no one-line shell command`);
  return command[0].replaceAll('$$', '$');
}

/** Replaces `from` in a job's script, which must contain it (a changed Compose file fails loudly). */
function rewrite(script: string, from: string, to: string): string {
  if (!script.includes(from)) throw new Error(`the Compose job no longer contains '${from}'`);
  return script.replaceAll(from, to);
}

export interface SchemaJobs {
  /** `temporal-schema-setup`: creates the databases and the schema when missing, upgrades an older schema. */
  setup(): Promise<string>;
  /** `temporal-schema-upgrade`: upgrades both schemas to this tool's version. */
  upgrade(): Promise<string>;
  /** Not a Compose job: both databases at older schema versions, as an older admin-tools release left them. */
  installAt(versions: { temporal: string; visibility: string }): Promise<void>;
}

/** The schema version of Temporal's two databases and the number of updates each has recorded. */
export async function schemaVersions(
  pg: Postgres,
): Promise<Record<'temporal' | 'temporal_visibility', { version: string; updates: number }>> {
  const psql = path.join(postgresBinDir(), 'psql');
  const query = async (db: string) => {
    const [cmd, args] = asPostgres(psql, [
      '-h',
      pg.socketDir,
      '-p',
      String(pg.port),
      '-U',
      'postgres',
      '-d',
      db,
      '-At',
      '-c',
      'SELECT (SELECT curr_version FROM schema_version), (SELECT count(*) FROM schema_update_history)',
    ]);
    const [version, updates] = (await run(cmd, args, process.env)).trim().split('|');
    return { version, updates: Number(updates) };
  };
  return {
    temporal: await query('temporal'),
    temporal_visibility: await query('temporal_visibility'),
  };
}

/** The Compose schema jobs against `pg`, with temporal-sql-tool built from the module and its schema directory. */
export async function schemaJobs(
  pg: Postgres,
  db: { user: string; password: string },
  opts: EnsureOptions = {},
): Promise<SchemaJobs> {
  const sqlTool = await ensureTemporalSqlTool(opts);
  const schemaDir = await temporalServerSchemaDir(opts);
  const env = {
    PATH: `${path.dirname(sqlTool)}:${process.env.PATH}`,
    POSTGRES_USER: db.user,
    SQL_PASSWORD: db.password,
  };
  const adapt = (script: string) =>
    rewrite(
      rewrite(script, '--ep postgresql -p 5432', `--ep 127.0.0.1 -p ${pg.port}`),
      '/etc/temporal/schema',
      schemaDir,
    );
  const tool = (...args: string[]) =>
    run(
      sqlTool,
      [
        '--plugin',
        'postgres12',
        '--ep',
        '127.0.0.1',
        '-p',
        String(pg.port),
        '-u',
        db.user,
        ...args,
      ],
      env,
    );
  return {
    setup: () => run('sh', ['-c', adapt(composeJobScript('temporal-schema-setup'))], env),
    upgrade: () => run('sh', ['-c', adapt(composeJobScript('temporal-schema-upgrade'))], env),
    async installAt(versions) {
      for (const [schema, dbName, version] of [
        ['temporal', 'temporal', versions.temporal],
        ['visibility', 'temporal_visibility', versions.visibility],
      ]) {
        await tool('--db', dbName, 'create');
        await tool('--db', dbName, 'setup-schema', '-v', '0.0');
        const dir = path.join(schemaDir, 'postgresql', 'v12', schema, 'versioned');
        await tool('--db', dbName, 'update-schema', '-d', dir, '--version', version);
      }
    },
  };
}

export interface ProductionTemporal {
  address: string;
  namespace: string;
  process: ServerProcess;
  /** Server metrics (PROMETHEUS_ENDPOINT). */
  metricsUrl: string;
  stop(): Promise<void>;
}

/**
 * The server as the `temporal` service of Compose runs it: 512 history shards, PostgreSQL for
 * persistence and visibility, deploy/temporal-dynamicconfig.yaml; then the `temporal-namespace`
 * job (namespace and search attributes) with the Temporal CLI. Every port a free one on 127.0.0.1.
 */
export async function startProductionTemporal(opts: {
  dir: string;
  pg: Postgres;
  db: { user: string; password: string };
  namespace?: string;
  ensure?: EnsureOptions;
}): Promise<ProductionTemporal> {
  const server = await ensureTemporalServer(opts.ensure);
  const cli = await ensureTemporal(opts.ensure);
  const configRoot = path.dirname(await temporalServerSchemaDir(opts.ensure));
  const ports: Record<string, number> = {};
  for (const name of [
    'FRONTEND_GRPC_PORT',
    'FRONTEND_HTTP_PORT',
    'FRONTEND_MEMBERSHIP_PORT',
    'INTERNAL_FRONTEND_HTTP_PORT',
    'INTERNAL_FRONTEND_GRPC_PORT',
    'INTERNAL_FRONTEND_MEMBERSHIP_PORT',
    'MATCHING_GRPC_PORT',
    'MATCHING_MEMBERSHIP_PORT',
    'HISTORY_GRPC_PORT',
    'HISTORY_MEMBERSHIP_PORT',
    'WORKER_GRPC_PORT',
    'WORKER_MEMBERSHIP_PORT',
    'METRICS',
  ])
    ports[name] = name.endsWith('MEMBERSHIP_PORT') ? await freeMembershipPort() : await freePort();
  const { METRICS, ...portEnv } = ports;
  fs.mkdirSync(opts.dir, { recursive: true });
  const proc = spawnServer({
    name: 'temporal-server',
    command: server,
    args: [
      '--root',
      configRoot,
      '--config',
      'config',
      '--env',
      'docker',
      '--allow-no-auth',
      'start',
    ],
    logFile: path.join(opts.dir, 'temporal-server.log'),
    env: {
      PATH: process.env.PATH,
      // The `temporal` service's environment in docker-compose.yml (x-temporal-db and its own).
      DB: 'postgres12',
      DB_PORT: String(opts.pg.port),
      // The template reads visibility's port from POSTGRES_PORT (Compose leaves both at 5432).
      POSTGRES_PORT: String(opts.pg.port),
      POSTGRES_SEEDS: '127.0.0.1',
      POSTGRES_USER: opts.db.user,
      POSTGRES_PWD: opts.db.password,
      DBNAME: 'temporal',
      VISIBILITY_DBNAME: 'temporal_visibility',
      NUM_HISTORY_SHARDS: '512',
      BIND_ON_IP: '127.0.0.1',
      TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
      PROMETHEUS_ENDPOINT: `127.0.0.1:${METRICS}`,
      DYNAMIC_CONFIG_FILE_PATH: path.join(ROOT, 'deploy', 'temporal-dynamicconfig.yaml'),
      LOG_LEVEL: 'warn',
      ...Object.fromEntries(Object.entries(portEnv).map(([k, v]) => [k, String(v)])),
    },
  });
  const address = `127.0.0.1:${ports.FRONTEND_GRPC_PORT}`;
  const namespace = opts.namespace ?? 'default';
  try {
    await waitUntilReady(proc, () => waitForTcp('127.0.0.1', ports.FRONTEND_GRPC_PORT, 500), {
      timeoutMs: 180_000,
    });
    await run('sh', ['-c', composeJobScript('temporal-namespace')], {
      PATH: `${path.dirname(cli)}:${process.env.PATH}`,
      HOME: opts.dir,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      TEMPORAL_RETENTION: '72h',
    });
  } catch (err) {
    await proc.stop();
    throw new Error(`${(err as Error).message}\ntemporal-server log:\n${proc.logTail()}`);
  }
  return {
    address,
    namespace,
    process: proc,
    metricsUrl: `http://127.0.0.1:${METRICS}/metrics`,
    stop: () => proc.stop(),
  };
}

/**
 * A free port below 32768: Temporal stores membership ports in a PostgreSQL smallint
 * (cluster_membership.rpc_port), so one from the ephemeral range kills the server at start.
 */
async function freeMembershipPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await isPortFree(port)) return port;
  }
}

/** A private scratch directory PostgreSQL's OS user can reach (mkdtemp's 0700 parent would hide it). */
export function scratchDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  return dir;
}

/** Runs a command to its end; resolves with its output, rejects with it on a non-zero exit. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command} exited ${code}:\n${out}`)),
    );
  });
}
