import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../cli/run-cli';
import { accountCap } from '../../store/accounts';
import { generateId } from '../../store/ids';
import { insertRun } from '../../store/runs';
import { pendingRun } from '../support/store';
import { expectRefusedWithin2s } from '../support/api-assert';
import { call } from '../support/http';
import { useService } from '../support/use-service';

// D27: the operator CLI against the real stack (its own fresh database; no worker needed).
describe('operator CLI (D27)', function () {
  this.timeout(120_000);
  const ctx = useService({ account: false, worker: false });
  let tmp: string;

  before(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'wrs-cli-'));
  });
  after(async () => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, {
      collections: ctx.svc.store.collections,
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  async function cliJson(...argv: string[]): Promise<any> {
    const r = await cli(...argv, '--json');
    assert.equal(r.code, 0, r.err);
    return JSON.parse(r.out);
  }

  it('creates an account with credits; the ledger shows the opening credit and the balance', async () => {
    const created = await cli('accounts', 'create', '--name', 'Acme Corp', '--credits', '12.5');
    assert.equal(created.code, 0, created.err);
    const accountId = created.out.match(/\bacct_[0-9A-Z]{26}\b/)?.[0];
    assert.ok(accountId, created.out);
    assert.match(created.out, /\$12\.50/);

    const show = await cliJson('accounts', 'show', accountId);
    assert.equal(show.id, accountId);
    assert.equal(show.name, 'Acme Corp');
    assert.equal(show.balance_usd, 12.5);

    const ledger = await cliJson('ledger', accountId);
    assert.equal(ledger.balance_usd, 12.5);
    assert.equal(ledger.entries.length, 1);
    assert.equal(ledger.entries[0].kind, 'credit');
    assert.equal(ledger.entries[0].amount_usd, 12.5);
    assert.equal(ledger.entries[0].note, 'opening balance');

    const human = await cli('ledger', accountId);
    assert.equal(human.code, 0, human.err);
    assert.match(human.out, /Balance: \$12\.50/);
    assert.match(human.out, /credit\s+\$12\.50\s+opening balance/);
  });

  it('sets, shows and clears an account’s cap of concurrent provider calls (D36)', async () => {
    const { id } = await cliJson('accounts', 'create', '--name', 'Capped');
    assert.equal((await cliJson('accounts', 'show', id)).max_provider_calls, null);
    assert.equal(
      (await cliJson('accounts', 'provider-calls', id, '--max', '3')).max_provider_calls,
      3,
    );
    assert.equal(await accountCap(ctx.svc.store.collections, id, 'max_provider_calls'), 3);
    assert.equal((await cliJson('accounts', 'show', id)).max_provider_calls, 3);
    assert.equal((await cli('accounts', 'provider-calls', id, '--max', '0')).code, 2);
    assert.equal(
      (await cliJson('accounts', 'provider-calls', id, '--max', 'default')).max_provider_calls,
      null,
    );
    assert.equal(await accountCap(ctx.svc.store.collections, id, 'max_provider_calls'), null);
  });

  for (const [command, cap, described, decision] of [
    [
      'file-storage',
      'max_file_storage_bytes',
      /files and stored items within 1073741824 bytes/,
      'D19',
    ],
    [
      'workflow-storage',
      'max_workflow_storage_bytes',
      /published workflows within 1073741824 bytes/,
      'D26',
    ],
  ] as const) {
    it(`sets, shows and clears an account’s own ${command} quota (${decision})`, async () => {
      const { id } = await cliJson('accounts', 'create', '--name', 'Storage');
      const set = await cliJson('accounts', command, id, '--max', '1073741824');
      assert.equal(set[cap], 1_073_741_824);
      assert.equal((await cliJson('accounts', 'show', id))[cap], 1_073_741_824);
      const human = await cli('accounts', command, id);
      assert.match(human.out, described);
      assert.equal((await cli('accounts', command, id, '--max', '-1')).code, 2);
      await cliJson('accounts', command, id, '--max', 'default');
      assert.equal(await accountCap(ctx.svc.store.collections, id, cap), null);
    });
  }

  it('counts an account’s workflow storage again from its versions: a workflow from before the quota, then nothing to change (D26)', async () => {
    const { id } = await cliJson('accounts', 'create', '--name', 'Recount');
    await cliJson('workflows', 'publish', id, 'examples/hello.json');
    const { workflow_id: workflowId } = await cliJson(
      'workflows',
      'publish',
      id,
      'examples/hello.json',
    );
    const { workflows } = ctx.svc.store.collections;
    const counted = (await workflows.findOne({ _id: workflowId }))?.stored_bytes;
    assert.ok(counted && counted > 0, 'two versions counted at publish');
    // A workflow published before the quota existed: nothing counted.
    await workflows.updateOne({ _id: workflowId }, { $unset: { stored_bytes: '' } });

    const human = await cli('workflows', 'recount-storage', id);
    assert.equal(human.code, 0, human.err);
    assert.match(
      human.out,
      new RegExp(`hello \\(${workflowId}\\): not counted → ${counted} bytes`),
    );
    assert.equal((await workflows.findOne({ _id: workflowId }))?.stored_bytes, counted);
    const again = await cliJson('workflows', 'recount-storage', id);
    assert.deepEqual(again, { account_id: id, stored_bytes: counted, changed: [] });
    assert.equal(
      (await cli('workflows', 'recount-storage', 'acct_01ARZ3NDEKTSV4RRFFQ69G5FAV')).code,
      1,
    );
  });

  it('adds credits, also negative corrections, through the ledger', async () => {
    const { id } = await cliJson('accounts', 'create', '--name', 'Credits');
    assert.equal((await cliJson('accounts', 'show', id)).balance_usd, 0);

    const added = await cli('credits', 'add', id, '5', '--note', 'invoice 42');
    assert.equal(added.code, 0, added.err);
    assert.match(added.out, /Balance: \$5\.00/);
    const corrected = await cliJson('credits', 'add', id, '-1.25');
    assert.equal(corrected.balance_usd, 3.75);

    const ledger = await cliJson('ledger', id);
    assert.deepEqual(
      ledger.entries.map((e: any) => [e.amount_usd, e.note]),
      [
        [5, 'invoice 42'],
        [-1.25, null],
      ],
    );
    assert.equal((await cliJson('ledger', id, '--limit', '1')).entries.length, 1);

    const missing = await cli('credits', 'add', 'acct_01ARZ3NDEKTSV4RRFFQ69G5FAV', '5');
    assert.equal(missing.code, 1);
    assert.match(missing.err, /no account acct_01ARZ3NDEKTSV4RRFFQ69G5FAV/);
    assert.doesNotMatch(missing.err, /\n\s+at /, 'no stack trace');
  });

  it('shows tenants’ words as text: a run error’s terminal escapes are written out, never obeyed', async () => {
    const { id: accountId } = await cliJson('accounts', 'create', '--name', 'Escapes');
    const runId = generateId('run');
    // What a remote server can put in an item's error, which a batch copies into the run's: a window
    // title, a clipboard write, clear screen, a forged line, then "conceal".
    const error = `rows input failed: \x1b]0;all OK\x07\x1b]52;c;Y3Vy\x07\x1b[2J\x9b8m\u202Efdp\nRun run_FAKE`;
    await insertRun(
      ctx.svc.store.collections,
      pendingRun({
        _id: runId,
        account_id: accountId,
        key_id: 'key_x',
        status: 'failed',
        error,
        finalized: true,
      }),
    );
    const shown = await cli('runs', 'show', runId);
    assert.equal(shown.code, 0, shown.err);
    assert.doesNotMatch(shown.out, /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]/u);
    assert.match(
      shown.out,
      /error +rows input failed: \\u001b\]0;all OK\\u0007.*\\u009b8m\\u202efdp/,
    );
    assert.doesNotMatch(shown.out, /^Run run_FAKE/m, 'a value keeps to its line');
    assert.match(shown.out, /fdp\\nRun run_FAKE$/m);
    assert.equal((await cliJson('runs', 'show', runId)).error, error, 'JSON reads back the same');
  });

  it('says where a big run’s output items are, instead of showing its record’s empty list (D35)', async () => {
    const { id: accountId } = await cliJson('accounts', 'create', '--name', 'Big');
    const runId = generateId('run');
    await insertRun(
      ctx.svc.store.collections,
      pendingRun({
        _id: runId,
        account_id: accountId,
        key_id: 'key_x',
        status: 'completed',
        finalized: true,
        output: { answers: [] },
        stored_outputs: {
          answers: { node: 'ask', count: 20_000, pageRows: 100, idOffset: 0 },
        },
      }),
    );
    const shown = await cli('runs', 'show', runId);
    assert.equal(shown.code, 0, shown.err);
    assert.match(
      shown.out,
      new RegExp(`answers: 20000 items, stored apart: GET /api/v1/runs/${runId}/outputs/answers`),
    );
    assert.doesNotMatch(shown.out, /"answers": \[\]/);
  });

  it('issues a key that authenticates against the API, lists it without secrets, and revokes it', async () => {
    const { id: accountId } = await cliJson(
      'accounts',
      'create',
      '--name',
      'Keys',
      '--credits',
      '1',
    );
    const created = await cli('keys', 'create', accountId, '--name', 'ci');
    assert.equal(created.code, 0, created.err);
    const secret = created.out.match(/\bwrs_sk_[0-9A-Za-z]{32,}\b/)?.[0];
    const keyId = created.out.match(/\bkey_[0-9A-Z]{26}\b/)?.[0];
    assert.ok(secret && keyId, created.out);
    assert.match(created.out, /cannot be shown again/);

    const probe = '/api/v1/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    assert.equal((await call(ctx.svc.url, 'GET', probe, { key: secret })).status, 404);

    const list = await cli('keys', 'list', accountId);
    assert.equal(list.code, 0, list.err);
    assert.match(list.out, new RegExp(keyId));
    assert.ok(!list.out.includes(secret), 'the secret is never listed');
    const listed = await cliJson('keys', 'list', accountId);
    assert.equal(listed.length, 1);
    assert.equal(listed[0].id, keyId);
    assert.equal(listed[0].name, 'ci');
    assert.equal(listed[0].revoked_at, null);
    assert.ok(secret.startsWith(listed[0].hint));
    assert.ok(!('hash' in listed[0]) && !('secret' in listed[0]));

    const revoked = await cli('keys', 'revoke', keyId);
    assert.equal(revoked.code, 0, revoked.err);
    const revokedAt = Date.now(); // the CLI has revoked it by now (a process start earlier)
    await expectRefusedWithin2s(
      async () => (await call(ctx.svc.url, 'GET', probe, { key: secret })).status,
      revokedAt,
    ); // D6

    assert.notEqual((await cliJson('keys', 'list', accountId))[0].revoked_at, null);

    const again = await cli('keys', 'revoke', keyId);
    assert.equal(again.code, 0, again.err);
    assert.match(again.out, /already revoked/);
    assert.equal((await cli('keys', 'revoke', 'key_01ARZ3NDEKTSV4RRFFQ69G5FAV')).code, 1);
    assert.equal((await cli('keys', 'create', 'acct_01ARZ3NDEKTSV4RRFFQ69G5FAV')).code, 1);
  });

  it('publishes examples/hello.json like the API, as a new version on republish', async () => {
    const { id: accountId } = await cliJson(
      'accounts',
      'create',
      '--name',
      'Publisher',
      '--credits',
      '1',
    );
    const first = await cli('workflows', 'publish', accountId, 'examples/hello.json');
    assert.equal(first.code, 0, first.err);
    assert.match(first.out, /Published hello version 1/);
    assert.match(first.out, /\bwf_[0-9A-Z]{26}\b/);
    assert.match(first.out, /name \(text, required\)/);
    assert.match(first.out, /greeting/);

    const second = await cliJson('workflows', 'publish', accountId, 'examples/hello.json');
    assert.equal(second.slug, 'hello');
    assert.equal(second.version, 2);
    assert.deepEqual(
      second.inputs.map((i: any) => i.key),
      ['name'],
    );
    assert.deepEqual(
      second.outputs.map((o: any) => o.key),
      ['greeting'],
    );

    // What the CLI published is what the API runs: the key's account sees the workflow by slug.
    const { secret } = await cliJson('keys', 'create', accountId);
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: secret,
      body: { workflowId: 'hello', inputs: { name: 'Ada' } },
    });
    assert.equal(start.status, 202, JSON.stringify(start.body));

    const shown = await cli('runs', 'show', start.body.run_id);
    assert.equal(shown.code, 0, shown.err);
    assert.match(shown.out, new RegExp(`Run ${start.body.run_id}`));
    assert.match(shown.out, /status\s+pending/);
    const run = await cliJson('runs', 'show', start.body.run_id);
    assert.equal(run.id, start.body.run_id);
    assert.equal(run.account_id, accountId);
    assert.equal(run.published_workflow_id, second.workflow_id);
    assert.deepEqual(run.inputs, { name: 'Ada' });
    assert.equal((await cli('runs', 'show', 'run_01ARZ3NDEKTSV4RRFFQ69G5FAV')).code, 1);
  });

  it('refuses an invalid workflow file with exit 1 and lists every problem', async () => {
    const { id: accountId } = await cliJson('accounts', 'create', '--name', 'Invalid');
    const file = path.join(tmp, 'bad.json');
    writeFileSync(
      file,
      JSON.stringify({
        slug: 'bad',
        nodes: [
          { id: 'a', type: 'user_input', label: 'Name', input_type: 'text' },
          { id: 'b', type: 'user_input', label: 'name', input_type: 'text' },
          { id: 'c', type: 'no_such_type' },
          { id: 'out', type: 'user_result', label: 'Out' },
        ],
        edges: [{ from: 'a', to: 'missing' }],
      }),
    );
    const r = await cli('workflows', 'publish', accountId, file);
    assert.equal(r.code, 1, r.out);
    const problems = r.err.split('\n').filter((l) => /^ {2}\S/.test(l));
    assert.ok(problems.length >= 3, r.err);
    assert.match(r.err, /no_such_type|c/);
    assert.match(r.err, /missing/);
    assert.doesNotMatch(r.err, /\n\s+at /, 'no stack trace');
    assert.equal(
      await ctx.svc.store.collections.workflows.countDocuments({ account_id: accountId }),
      0,
    );

    const notJson = path.join(tmp, 'not.json');
    writeFileSync(notJson, '{ nope');
    const r2 = await cli('workflows', 'publish', accountId, notJson);
    assert.equal(r2.code, 1);
    assert.match(r2.err, /not valid JSON/);
    const r3 = await cli('workflows', 'publish', accountId, path.join(tmp, 'absent.json'));
    assert.equal(r3.code, 1);
    assert.match(r3.err, /cannot read .*ENOENT/);
  });

  it('answers usage errors with exit 2 and the usage, --help with exit 0', async () => {
    for (const argv of [
      [],
      ['frobnicate'],
      ['accounts'],
      ['accounts', 'create'],
      ['accounts', 'show'],
      ['accounts', 'show', 'a', 'b'],
      ['keys', 'create', 'acct_x', '--bogus'],
      ['credits', 'add', 'acct_x', 'ten'],
      ['credits', 'add', 'acct_x', '0'],
      ['ledger', 'acct_x', '--limit', '-3'],
      ['ledger', 'acct_x', '--name', 'x'],
    ]) {
      const r = await cli(...argv);
      assert.equal(r.code, 2, `${argv.join(' ')}: ${r.out} ${r.err}`);
      assert.match(r.err, /Usage: npm run cli --/, argv.join(' '));
      assert.equal(r.out, '');
    }
    const help = await cli('--help');
    assert.equal(help.code, 0);
    assert.match(help.out, /workflows publish ACCOUNT_ID FILE\.json/);
    assert.equal((await cli('keys', 'create', '--help')).code, 0);
  });

  it('runs as `npm run cli` through cli/wrs.ts with MONGODB_URI and MONGODB_DB from the environment', () => {
    const env = {
      ...process.env,
      MONGODB_URI: ctx.svc.config.mongo.uri,
      MONGODB_DB: ctx.svc.config.mongo.dbName,
    };
    const tsx = path.join('node_modules', '.bin', 'tsx');
    const created = spawnSync(
      tsx,
      ['cli/wrs.ts', 'accounts', 'create', '--name', 'Entry', '--credits', '2', '--json'],
      { env, encoding: 'utf8' },
    );
    assert.equal(created.status, 0, created.stderr);
    const { id } = JSON.parse(created.stdout);
    const show = spawnSync(tsx, ['cli/wrs.ts', 'accounts', 'show', id], { env, encoding: 'utf8' });
    assert.equal(show.status, 0, show.stderr);
    assert.match(show.stdout, /balance\s+\$2\.00/);
    const missing = spawnSync(
      tsx,
      ['cli/wrs.ts', 'accounts', 'show', 'acct_01ARZ3NDEKTSV4RRFFQ69G5FAV'],
      { env, encoding: 'utf8' },
    );
    assert.equal(missing.status, 1);
    assert.equal(missing.stderr.trim(), 'wrs: no account acct_01ARZ3NDEKTSV4RRFFQ69G5FAV');
    const usage = spawnSync(tsx, ['cli/wrs.ts', 'nope'], { env, encoding: 'utf8' });
    assert.equal(usage.status, 2);
  });
});
