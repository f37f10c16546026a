// The alert rules (deploy/helm/files/alerts.yml, linked as deploy/prometheus/alerts.yml) pass `promtool check
// rules` and their unit tests (deploy/prometheus/alerts.test.yml, `promtool test rules`), in which every rule has a
// case that fires and one that does not; Compose's Prometheus configuration passes `promtool check config` and its
// Alertmanager's `amtool check-config` (a route to a receiver).
// promtool is built from the Prometheus Go module of the Compose image's release (tools/stack/binaries.ts).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NodeSchema } from '../../domain/graph';
import { ensureAmtool, ensurePromtool } from '../../tools/stack/binaries';
import { REPO, readYaml, runTool } from '../support/deploy';

const RULES = path.join(REPO, 'deploy/helm/files/alerts.yml');
const TESTS = path.join(REPO, 'deploy/prometheus/alerts.test.yml');

interface RuleTests {
  rule_files: string[];
  tests: {
    name: string;
    alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[];
  }[];
}

describe('alert rules (promtool)', function () {
  let promtool: string;
  let amtool: string;
  before(async function () {
    this.timeout(40 * 60_000); // Go builds of promtool and amtool when tools/stack/install.ts has not yet
    promtool = await ensurePromtool();
    amtool = await ensureAmtool();
  });

  it("Alertmanager's configuration passes amtool check-config and routes to a receiver", async function () {
    this.timeout(60_000);
    const result = await runTool(amtool, [
      'check-config',
      path.join(REPO, 'deploy/alertmanager/alertmanager.yml'),
    ]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /SUCCESS[\s\S]*1 receivers/);
  });

  it('the rule file passes promtool check rules, and the Prometheus configuration check config', async function () {
    this.timeout(60_000);
    const rules = await runTool(promtool, ['check', 'rules', RULES]);
    assert.equal(rules.code, 0, rules.stdout + rules.stderr);
    const config = await runTool(promtool, [
      'check',
      'config',
      '--syntax-only',
      path.join(REPO, 'deploy/prometheus/prometheus.yml'),
    ]);
    assert.equal(config.code, 0, config.stdout + config.stderr);
  });

  it('every rule has a unit test where it fires and one where it does not', () => {
    const alerts = readYaml<{ groups: { rules: { alert: string }[] }[] }>(RULES).groups.flatMap(
      (g) => g.rules.map((r) => r.alert),
    );
    const cases = readYaml<RuleTests>(TESTS).tests.flatMap((t) => t.alert_rule_test ?? []);
    const fires = new Set(cases.filter((c) => c.exp_alerts?.length).map((c) => c.alertname));
    const quiet = new Set(cases.filter((c) => !c.exp_alerts?.length).map((c) => c.alertname));
    assert.deepEqual(
      alerts.filter((a) => !fires.has(a)),
      [],
      'rules without a firing case',
    );
    assert.deepEqual(
      alerts.filter((a) => !quiet.has(a)),
      [],
      'rules without a quiet case',
    );
    // Every case names a rule that exists.
    assert.deepEqual(
      cases.map((c) => c.alertname).filter((a) => !alerts.includes(a)),
      [],
    );
  });

  it('WrsNodeRetriesHigh reads the node types that call a model provider, and only those', () => {
    const rule = readYaml<{ groups: { rules: { alert: string; expr: string }[] }[] }>(RULES)
      .groups.flatMap((g) => g.rules)
      .find((r) => r.alert === 'WrsNodeRetriesHigh');
    // Its numerator and denominator alike: a tenant's own endpoints (http_request, its webhook
    // receiver, its file URLs) fail at the tenant's will.
    const selectors = [...(rule?.expr ?? '').matchAll(/\{([^}]*)\}/g)].map((m) => m[1]);
    assert.equal(selectors.length, 2, rule?.expr);
    const providerTypes = NodeSchema.options
      .filter((node) => 'provider' in node.shape)
      .map((node) => node.shape.type.value)
      .sort();
    assert.deepEqual(providerTypes, ['image_generation', 'llm', 'model']);
    for (const selector of selectors) {
      const types = /^type=~"([\w|]+)"$/.exec(selector)?.[1].split('|').sort();
      assert.deepEqual(types, providerTypes, selector);
    }
  });

  it('passes promtool test rules', async function () {
    this.timeout(120_000);
    const result = await runTool(promtool, ['test', 'rules', TESTS]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /SUCCESS/);
  });

  it('the unit tests can fail: a rule whose threshold moved fails them', async function () {
    this.timeout(120_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-rules-'));
    fs.mkdirSync(path.join(dir, 'helm/files'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'prometheus'));
    const rules = fs.readFileSync(RULES, 'utf8');
    assert.ok(rules.includes('> 26 * 3600'));
    fs.writeFileSync(
      path.join(dir, 'helm/files/alerts.yml'),
      rules.replace('> 26 * 3600', '> 30 * 3600'),
    );
    fs.copyFileSync(TESTS, path.join(dir, 'prometheus/alerts.test.yml'));
    const result = await runTool(promtool, [
      'test',
      'rules',
      path.join(dir, 'prometheus/alerts.test.yml'),
    ]);
    assert.notEqual(result.code, 0);
    assert.match(result.stdout + result.stderr, /alertname: WrsBackupTooOld/);
  });
});
