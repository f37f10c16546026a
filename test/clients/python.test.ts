// The Python client (clients/python) pip-installs from the repository and its pytest suite
// passes against a real service: runs, errors, streams resumed by Last-Event-ID (its own and
// httpx-sse's), uploads, pages, D31 item pages, D34 stream links, webhooks verified by
// `standardwebhooks`. Python and the pinned packages come from the venv tools/stack/install.ts builds.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensurePythonClientEnv } from '../../tools/stack/python-tools';
import { webhookSecret } from '../../store/accounts';
import { useService } from '../support/use-service';

const PACKAGE = path.join(__dirname, '..', '..', 'clients', 'python');

/** Runs a command to its end; resolves with its exit code and combined output. */
function runCommand(
  command: string,
  args: string[],
  opts: { cwd: string; env?: Record<string, string> },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output: Buffer.concat(chunks).toString('utf8') }));
  });
}

describe('Python client (clients/python)', function () {
  this.timeout(300_000);
  let python: string;
  let dir: string;
  const ctx = useService({
    fakeOpenAI: true,
    account: false,
    env: { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORK: 'true' },
  });

  before(async () => {
    python = await ensurePythonClientEnv();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-python-client-'));
  });
  after(async () => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('installs with pip from the repository and passes its tests against the service', async () => {
    // Built from a copy, so the build leaves nothing in the working tree; offline (setuptools is in the venv).
    const source = path.join(dir, 'source');
    fs.cpSync(PACKAGE, source, {
      recursive: true,
      filter: (p) => !/(__pycache__|\.egg-info|[/\\]build)$/.test(p),
    });
    const site = path.join(dir, 'site');
    const install = await runCommand(
      python,
      [
        '-m',
        'pip',
        'install',
        '--quiet',
        '--disable-pip-version-check',
        '--no-deps',
        '--no-build-isolation',
        '--target',
        site,
        source,
      ],
      { cwd: dir },
    );
    assert.equal(install.code, 0, install.output);
    assert.ok(
      fs.existsSync(path.join(site, 'wrs_client', 'py.typed')),
      'the installed package ships its type marker',
    );

    const { accountId, key } = await ctx.newAccount();
    const secret = await webhookSecret(ctx.svc.store.collections, accountId);
    // The tests import the installed copy, not the source: what a user's `pip install` gets.
    const tests = await runCommand(
      python,
      [
        '-m',
        'pytest',
        path.join(source, 'tests'),
        '-q',
        '-p',
        'no:cacheprovider',
        '--rootdir',
        source,
      ],
      {
        cwd: dir,
        env: {
          PYTHONPATH: site,
          WRS_BASE_URL: ctx.svc.url,
          WRS_API_KEY: key,
          WRS_WEBHOOK_SECRET: secret!,
        },
      },
    );
    assert.equal(tests.code, 0, tests.output);
    const summary = /(\d+) passed/.exec(tests.output);
    assert.ok(summary && Number(summary[1]) >= 13, tests.output);
    assert.doesNotMatch(tests.output, /skipped|xfail/, tests.output);
  });
});
