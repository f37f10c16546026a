/**
 * D40: an error that escapes a request does not take the API process down. The API's server and
 * last resort run in a child process (test/reliability/last-resort-server.ts) around routes that
 * let an error escape as a bug would; each such request is answered 500 in the envelope while its
 * answer has not begun (else its connection is cut), every error is logged with
 * `last_resort: true`, and the process goes on serving.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { expectError } from '../support/api-assert';
import { call, waitFor } from '../support/http';

const ROOT = path.resolve(__dirname, '..', '..');

describe('reliability: the last resort keeps the API process serving (D40)', function () {
  this.timeout(60_000);
  let child: ChildProcess;
  let url: string;
  let output = '';

  before(async () => {
    child = spawn(
      process.execPath,
      ['--require', 'tsx/cjs', 'test/reliability/last-resort-server.ts'],
      { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: 'pipe' },
    );
    child.stdout!.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString('utf8')));
    url = await waitFor(async () => /LISTENING (\S+)/.exec(output)?.[1], {
      timeoutMs: 30_000,
      what: `the server to listen: ${output}`,
    });
  });
  after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  function assertAlive(): Promise<void> {
    assert.equal(child.exitCode, null, `the process exited:\n${output}`);
    return call(url, 'GET', '/healthz').then((res) => assert.equal(res.status, 200));
  }

  it('an error event nobody listens for, and a throw in a timer of the request: 500 in the envelope, and the process serves on', async () => {
    for (const route of ['/emit', '/throw-in-timer']) {
      const res = await call(url, 'GET', route, { timeoutMs: 10_000 });
      expectError(res, { status: 500, type: 'server_error' });
      assert.equal(res.headers.get('connection'), 'close');
      await assertAlive();
    }
  });

  it('a rejection nobody awaits is logged; the request is answered as usual', async () => {
    const res = await call(url, 'GET', '/reject');
    assert.equal(res.status, 200);
    await waitFor(async () => (/unhandled promise rejection/.test(output) ? true : undefined));
    await assertAlive();
  });

  it('a throw after the answer began cuts that connection only', async () => {
    const res = await fetch(`${url}/after-head`);
    assert.equal(res.status, 200);
    await assert.rejects(res.text(), /terminated/);
    await assertAlive();
  });

  it('each is logged with last_resort: true, naming the request', async () => {
    const paths = ['/emit', '/throw-in-timer', '/after-head'];
    const lastResort = () =>
      output
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { last_resort?: boolean; path?: string; msg: string })
        .filter((l) => l.last_resort);
    const isLogged = (path: string) =>
      lastResort().some((l) => l.path === path && l.msg === 'uncaught exception in a request');
    // The line of a cut connection may reach this process's pipe after the client saw the cut.
    await waitFor(async () => (paths.every(isLogged) ? true : undefined), {
      timeoutMs: 10_000,
      what: `a last-resort line for each of ${paths.join(', ')}`,
    });
    assert.ok(lastResort().some((l) => l.msg === 'unhandled promise rejection'));
  });
});
