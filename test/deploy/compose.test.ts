// Issue 20: docker-compose.yml is valid against the Compose Specification schema (the one compose-go, the
// loader of `docker compose`, ships) and has the production properties the issue lists. Docker itself cannot
// run here: what `docker compose up` would do beyond this is not tested (docs/deploy.md says what).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { ensureComposeCheck } from '../../tools/stack/binaries';
import { COMPOSE_GO_VERSION, ensureComposeSpecSchema } from '../../tools/stack/deploy-schemas';
import { COMPOSE_FILE, REPO, readYaml, runTool } from '../support/deploy';

interface Service {
  image?: string;
  ports?: string[];
  command?: string[];
  environment?: Record<string, unknown>;
  volumes?: string[];
  profiles?: string[];
  deploy?: { resources?: { limits?: { cpus?: string; memory?: string } } };
  healthcheck?: unknown;
}
interface Compose {
  services: Record<string, Service>;
  secrets: Record<string, { file: string }>;
}

describe('docker-compose.yml', function () {
  let compose: Compose;
  let validate: (doc: unknown) => { ok: boolean; errors: string };

  before(async function () {
    this.timeout(5 * 60_000);
    const schema = JSON.parse(fs.readFileSync(await ensureComposeSpecSchema(), 'utf8')) as object;
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    const check = ajv.compile(schema);
    validate = (doc) => ({
      ok: check(doc) as boolean,
      errors: ajv.errorsText(check.errors, { separator: '\n' }),
    });
    compose = readYaml<Compose>(COMPOSE_FILE);
  });

  it('validates against the Compose Specification schema with 0 errors', () => {
    const result = validate(compose);
    assert.ok(result.ok, result.errors);
  });

  it('loads with compose-go (the loader of docker compose): interpolation, references, depends_on', async function () {
    this.timeout(10 * 60_000); // builds stack/compose-check when tools/stack/install.ts has not yet
    // The loader and the schema above come from one compose-go release.
    assert.match(
      fs.readFileSync(path.join(REPO, 'tools/stack/compose-check/go.mod'), 'utf8'),
      new RegExp(`compose-go/v2 v${COMPOSE_GO_VERSION.replace(/\./g, '\\.')}\\b`),
    );
    const tool = await ensureComposeCheck();
    const { TEMPORAL_DB_PASSWORD: _unset, ...env } = process.env;
    const loaded = await runTool(tool, [COMPOSE_FILE], env);
    // Without TEMPORAL_DB_PASSWORD the file refuses to load (no quiet default).
    assert.notEqual(loaded.code, 0);
    assert.match(loaded.stderr, /required variable TEMPORAL_DB_PASSWORD is missing a value/);

    const result = await runTool(tool, [COMPOSE_FILE], {
      ...env,
      TEMPORAL_DB_PASSWORD: 'test-password',
      WRS_API_REPLICAS: '3',
    });
    assert.equal(result.code, 0, result.stderr);
    const project = JSON.parse(result.stdout) as {
      services: Record<
        string,
        { deploy?: { replicas?: number }; environment?: Record<string, string | null> }
      >;
    };
    assert.equal(project.services.api.deploy?.replicas, 3);
    assert.equal(project.services.temporal.environment?.POSTGRES_PWD, 'test-password');
    assert.equal(project.services.worker.environment?.MONGODB_URI_FILE, '/run/secrets/mongodb_uri');
  });

  it('the schema check can fail: an unknown service key is reported', () => {
    const broken = structuredClone(compose);
    (broken.services.api as Record<string, unknown>).replica = 2;
    const result = validate(broken);
    assert.equal(result.ok, false);
    assert.match(result.errors, /services\/api must NOT have (unevaluated|additional) properties/);
  });

  it('runs temporalio/server (not auto-setup) with 512 history shards and one-shot schema jobs', () => {
    const s = compose.services;
    assert.match(s.temporal.image ?? '', /^temporalio\/server:/);
    assert.ok(
      !Object.values(s).some((x) => /auto-setup/.test(x.image ?? '')),
      'no auto-setup image',
    );
    assert.equal(s.temporal.environment?.NUM_HISTORY_SHARDS, 512);
    assert.match(s['temporal-schema-setup'].image ?? '', /^temporalio\/admin-tools:/);
    assert.deepEqual(
      s['temporal-schema-upgrade'].profiles,
      ['upgrade'],
      'schema upgrades run only when asked for',
    );
  });

  it('pins every image to a version (no floating major or latest tag)', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      const image = service.image ?? '';
      const tag = /:(?:\$\{[A-Z_]+:-)?([^}@]+)\}?/.exec(image)?.[1] ?? '';
      assert.match(tag, /\d+\.\d+/, `${name}: ${image} is not pinned to a version`);
    }
  });

  it('puts resource limits on every service', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      const limits = service.deploy?.resources?.limits;
      assert.ok(limits?.cpus && limits.memory, `${name} has no cpu and memory limit`);
    }
  });

  it('publishes only the TLS proxy; monitoring and the UI on 127.0.0.1 only; the API not at all', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const port of service.ports ?? []) {
        if (name !== 'proxy') assert.match(port, /^127\.0\.0\.1:/, `${name} publishes ${port}`);
      }
    }
    assert.equal(compose.services.api.ports, undefined);
    const caddyfile = fs.readFileSync(path.join(REPO, 'deploy/compose/Caddyfile'), 'utf8');
    assert.match(caddyfile, /@metrics path \/metrics/);
    assert.match(caddyfile, /respond @metrics 404/);
  });

  it('runs MongoDB with auth, a keyfile, TLS and a WiredTiger cache cap', () => {
    const mongo = compose.services.mongodb;
    const args = (mongo.command ?? []).join(' ');
    for (const flag of ['--keyFile=', '--tlsMode=requireTLS', '--wiredTigerCacheSizeGB='])
      assert.ok(args.includes(flag), flag);
    assert.ok(mongo.environment?.MONGO_INITDB_ROOT_PASSWORD_FILE);
    assert.match(mongo.image ?? '', /^mongo:\d+\.\d+\.\d+$/);
  });

  it('gives TEMPORAL_DB_PASSWORD no default', () => {
    const text = fs.readFileSync(COMPOSE_FILE, 'utf8');
    assert.doesNotMatch(text, /TEMPORAL_DB_PASSWORD:-/);
    assert.match(text, /TEMPORAL_DB_PASSWORD:\?/);
  });

  it('deploy/compose/make-secrets.sh creates every secret file the Compose file names', async function () {
    this.timeout(120_000);
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-secrets-'));
    fs.mkdirSync(path.join(root, 'deploy/compose'), { recursive: true });
    fs.copyFileSync(
      path.join(REPO, 'deploy/compose/make-secrets.sh'),
      path.join(root, 'deploy/compose/make-secrets.sh'),
    );
    const result = await runTool('sh', [path.join(root, 'deploy/compose/make-secrets.sh')], {
      ...process.env,
      WRS_DOMAIN: 'runs.example.test',
      MONGODB_DB: 'wrs',
    });
    assert.equal(result.code, 0, result.stderr);
    for (const [name, { file }] of Object.entries(compose.secrets)) {
      assert.ok(fs.existsSync(path.join(root, file)), `secret ${name}: ${file} was not created`);
    }
    const uri = fs.readFileSync(path.join(root, 'secrets/mongodb_uri'), 'utf8').trim();
    const password = fs
      .readFileSync(path.join(root, 'secrets/mongodb_wrs_password'), 'utf8')
      .trim();
    assert.equal(
      uri,
      `mongodb://wrs:${password}@mongodb:27017/wrs?replicaSet=rs0&authSource=admin&tls=true&tlsCAFile=/run/secrets/tls_ca`,
    );
    const verify = await runTool('openssl', [
      'verify',
      '-CAfile',
      path.join(root, 'secrets/ca.crt'),
      path.join(root, 'secrets/mongodb.pem'),
    ]);
    assert.equal(verify.code, 0, verify.stderr);
  });

  it('refers only to files that exist in the repository (mounted configuration)', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0];
        if (source.startsWith('./'))
          assert.ok(fs.existsSync(path.join(REPO, source)), `${name}: ${source} is missing`);
      }
    }
  });
});
