// docker-compose.yml is valid against the Compose Specification schema (the one compose-go, the
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
import { DRAIN_CLOSE_MARGIN_MS } from '../../api/drain';

interface Service {
  image?: string;
  read_only?: boolean;
  cap_drop?: string[];
  security_opt?: string[];
  secrets?: string[];
  expose?: string[];
  depends_on?: Record<string, unknown>;
  ports?: string[];
  command?: string[];
  environment?: Record<string, unknown>;
  volumes?: string[];
  profiles?: string[];
  deploy?: { resources?: { limits?: { cpus?: string; memory?: string } } };
  healthcheck?: unknown;
  stop_grace_period?: string;
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
    const { TEMPORAL_DB_PASSWORD: _unset, PUBLIC_BASE_URL: _unsetToo, ...env } = process.env;
    const required = {
      TEMPORAL_DB_PASSWORD: 'test-password',
      PUBLIC_BASE_URL: 'https://runs.test',
    };
    // Without TEMPORAL_DB_PASSWORD, or PUBLIC_BASE_URL (the workers would sign file links on
    // http://127.0.0.1:8080), the file refuses to load (no quiet default).
    for (const name of ['TEMPORAL_DB_PASSWORD', 'PUBLIC_BASE_URL'] as const) {
      const loaded = await runTool(tool, [COMPOSE_FILE], {
        ...env,
        ...required,
        [name]: undefined,
      });
      assert.notEqual(loaded.code, 0);
      assert.match(loaded.stderr, new RegExp(`required variable ${name} is missing a value`));
    }

    const result = await runTool(tool, [COMPOSE_FILE], {
      ...env,
      ...required,
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
    assert.equal(project.services.worker.environment?.PUBLIC_BASE_URL, 'https://runs.test');
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
  });

  describe('the proxy (deploy/compose/Caddyfile)', () => {
    const caddyfile = fs.readFileSync(path.join(REPO, 'deploy/compose/Caddyfile'), 'utf8');
    /** The body of the site block whose address line is `address`, up to its closing brace at column 0. */
    const site = (address: string) => {
      const start = caddyfile.indexOf(`\n${address} {\n`);
      assert.ok(start >= 0, `site ${address}`);
      return caddyfile.slice(start, caddyfile.indexOf('\n}\n', start));
    };
    const publicSite = site('{$WRS_DOMAIN}');

    it('routes only the public paths: not /codec (which decrypts every account), /metrics or the probes', () => {
      const routed = /@public path (.+)/.exec(publicSite)?.[1].split(/\s+/);
      assert.deepEqual(routed, ['/', '/api/*', '/files/*', '/streams/*', '/playground/*']);
      // One proxy in the public site, behind the allowlist; everything else answers 404.
      assert.equal(publicSite.match(/reverse_proxy/g)?.length, 1);
      assert.match(publicSite, /handle @public \{\s*reverse_proxy/);
      assert.match(publicSite, /handle \{\s*respond 404\s*\}/);
    });

    it('never logs a codec token: the public access log redacts /codec/<token>, the codec listener has no log', () => {
      assert.match(publicSite, /request>uri regexp "\^\/codec\/\[\^\/\?\]\*" "\/codec\/REDACTED"/);
      const codec = site('http://:8081');
      assert.doesNotMatch(codec, /\blog\b/);
      assert.match(codec, /@codec path \/codec\/\*/);
      // Published on the host's loopback only.
      assert.ok(compose.services.proxy.ports?.some((p) => /^127\.0\.0\.1:.*:8081$/.test(p)));
    });

    it('serves its own metrics on an internal listener only (exposed, not published)', () => {
      assert.match(site('http://:9180'), /^\s*metrics \/metrics\s*$/m);
      assert.ok(compose.services.proxy.expose?.includes('9180'));
      assert.ok(!compose.services.proxy.ports?.some((p) => p.includes('9180')));
    });

    it('health-checks each API replica on /readyz (listed upstreams: Caddy does not health-check dynamic ones)', () => {
      assert.doesNotMatch(caddyfile, /^\s*dynamic\s/m);
      assert.match(caddyfile, /to \{\$WRS_API_UPSTREAMS\}/);
      assert.match(caddyfile, /health_uri \/readyz/);
      // The default upstream list names as many replicas as WRS_API_REPLICAS' default.
      const upstreams = /\$\{WRS_API_UPSTREAMS:-([^}]+)\}/.exec(
        String(compose.services.proxy.environment?.WRS_API_UPSTREAMS),
      )?.[1];
      const replicas = /\$\{WRS_API_REPLICAS:-(\d+)\}/.exec(
        fs.readFileSync(COMPOSE_FILE, 'utf8'),
      )?.[1];
      assert.deepEqual(
        upstreams?.split(' '),
        Array.from({ length: Number(replicas) }, (_, i) => `wrs-api-${i + 1}:8080`),
      );
    });
  });

  it("gives each drain its time: the proxy's health checks within the API's delay, stop_grace_period above both drains", () => {
    // A value of the shared environment: `${X:-default}` gives its default (ms).
    const ms = (name: string) => {
      const value = String(compose.services.api.environment?.[name]);
      return Number(/^\$\{\w+:-(\d+)\}$/.exec(value)?.[1] ?? value);
    };
    const seconds = (text = '') => {
      const m = /^(\d+)s$/.exec(text);
      assert.ok(m, `stop_grace_period ${text} in seconds`);
      return Number(m[1]) * 1000;
    };
    const caddyfile = fs.readFileSync(path.join(REPO, 'deploy/compose/Caddyfile'), 'utf8');
    const interval = Number(/health_interval (\d+)s/.exec(caddyfile)?.[1]) * 1000;
    const fails = Number(/health_fails (\d+)/.exec(caddyfile)?.[1]);
    // Readiness fails at SIGTERM; the proxy needs `fails` failed checks to stop sending.
    assert.ok(ms('API_SHUTDOWN_DELAY_MS') >= interval * fails, 'API_SHUTDOWN_DELAY_MS');
    const api = ms('API_SHUTDOWN_DELAY_MS') + ms('API_SHUTDOWN_GRACE_MS') + DRAIN_CLOSE_MARGIN_MS;
    assert.ok(seconds(compose.services.api.stop_grace_period) > api, `api: above ${api} ms`);
    // The worker: the SDK forces its shutdown 10 s after the grace (worker/start-worker.ts).
    const worker = ms('WORKER_SHUTDOWN_GRACE_MS') + 10_000;
    assert.ok(
      seconds(compose.services.worker.stop_grace_period) > worker,
      `worker: above ${worker} ms`,
    );
  });

  it('runs the API and the workers read-only, without capabilities, with no-new-privileges', () => {
    for (const name of ['api', 'worker']) {
      const service = compose.services[name];
      assert.equal(service.read_only, true, name);
      assert.deepEqual(service.cap_drop, ['ALL'], name);
      assert.deepEqual(service.security_opt, ['no-new-privileges:true'], name);
    }
  });

  it('gives Temporal its own PostgreSQL role, not the superuser', () => {
    const pg = compose.services.postgresql.environment ?? {};
    const temporal = compose.services.temporal.environment ?? {};
    assert.equal(pg.POSTGRES_USER, 'postgres');
    assert.equal(pg.POSTGRES_PASSWORD_FILE, '/run/secrets/postgresql_password');
    assert.equal(temporal.POSTGRES_USER, '${TEMPORAL_DB_USER:-temporal}');
    assert.equal(pg.TEMPORAL_DB_USER, temporal.POSTGRES_USER);
    const init = fs.readFileSync(path.join(REPO, 'deploy/compose/postgresql-init.sh'), 'utf8');
    assert.match(init, /CREATE ROLE :"role" WITH LOGIN CREATEDB NOSUPERUSER NOCREATEROLE/);
    assert.ok(
      compose.services.postgresql.volumes?.includes(
        './deploy/compose/postgresql-init.sh:/docker-entrypoint-initdb.d/temporal-role.sh:ro',
      ),
    );
  });

  it('sends alerts to Alertmanager, which has a receiver', () => {
    assert.match(compose.services.alertmanager.image ?? '', /^prom\/alertmanager:v\d+\.\d+\.\d+$/);
    const prometheus = readYaml<{
      alerting: { alertmanagers: { static_configs: { targets: string[] }[] }[] };
    }>(path.join(REPO, 'deploy/prometheus/prometheus.yml'));
    assert.deepEqual(prometheus.alerting.alertmanagers[0].static_configs[0].targets, [
      'alertmanager:9093',
    ]);
    const am = readYaml<{
      route: { receiver: string };
      receivers: { name: string; webhook_configs?: { url_file: string }[] }[];
    }>(path.join(REPO, 'deploy/alertmanager/alertmanager.yml'));
    const receiver = am.receivers.find((r) => r.name === am.route.receiver);
    assert.equal(receiver?.webhook_configs?.[0].url_file, '/run/secrets/alertmanager_webhook_url');
    assert.ok(compose.services.alertmanager.secrets?.includes('alertmanager_webhook_url'));
  });

  it('keeps backups/ out of git and out of the image build context', async () => {
    const ignored = await runTool('git', ['check-ignore', '-q', 'backups/mongodb-x.archive.gz']);
    assert.equal(ignored.code, 0, 'git ignores backups/');
    const dockerignore = fs.readFileSync(path.join(REPO, '.dockerignore'), 'utf8').split('\n');
    assert.ok(dockerignore.includes('backups'), '.dockerignore lists backups');
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
    // Private keys for their owner only; the rest readable by the containers' users.
    const mode = (file: string) => fs.statSync(path.join(root, 'secrets', file)).mode & 0o777;
    for (const key of ['ca.key', 'proxy.key', 'mongodb.pem', 'mongodb_keyfile'])
      assert.equal(mode(key).toString(8), '600', key);
    assert.equal(mode('mongodb_uri').toString(8), '644');
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
        // ./backups is the operators' data (deploy/compose/backup.sh creates it), not part of the repository.
        if (source.startsWith('./') && !source.startsWith('./backups/'))
          assert.ok(fs.existsSync(path.join(REPO, source)), `${name}: ${source} is missing`);
      }
    }
  });
});
