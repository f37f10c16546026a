/** tools/stack/registry.ts: a child whose owner was SIGKILLed is killed by the next reapOrphans(); one whose owner lives is not. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isPidAlive } from '../../../tools/stack/process';
import { reapOrphans, registerChild } from '../../../tools/stack/registry';
import { waitFor } from '../../support/http';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** A node process (the "owner") that spawns a detached `sleep`, registers it and prints its pid. */
function startOwner(dir: string): Promise<{ owner: number; child: number }> {
  const script = `
    const { spawn } = require('node:child_process');
    const { registerChild } = require('./tools/stack/registry');
    const c = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    c.unref();
    registerChild(c.pid, 'sleep', ${JSON.stringify(dir)});
    process.stdout.write(c.pid + '\\n');
    setInterval(() => {}, 1000);`;
  const owner = spawn(process.execPath, ['--require', 'tsx/cjs', '-e', script], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve) =>
    owner.stdout!.once('data', (c: Buffer) =>
      resolve({ owner: owner.pid!, child: Number(c.toString().trim()) }),
    ),
  );
}

describe('stack/registry (orphaned servers)', function () {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-registry-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('kills a registered process once its owner is gone, and only then', async () => {
    const { owner, child } = await startOwner(dir);
    try {
      assert.deepEqual(reapOrphans(dir), [], 'the owner is alive: nothing is reaped');
      assert.ok(isPidAlive(child));
      process.kill(owner, 'SIGKILL');
      await waitFor(async () => (isPidAlive(owner) ? undefined : true), { what: 'owner gone' });
      assert.deepEqual(
        reapOrphans(dir).map((k) => k.pid),
        [child],
      );
      await waitFor(async () => (isPidAlive(child) ? undefined : true), { what: 'orphan killed' });
      assert.deepEqual(fs.readdirSync(dir), [], 'its record is removed');
    } finally {
      for (const pid of [owner, child]) if (isPidAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('never kills a reused pid (same pid, another start time)', async () => {
    const sleeper = spawn('sleep', ['300'], { stdio: 'ignore' });
    registerChild(sleeper.pid!, 'sleep', dir);
    fs.writeFileSync(
      path.join(dir, 'x.json'),
      JSON.stringify({
        pid: sleeper.pid,
        start: '1',
        owner: 999_999_999,
        ownerStart: '1',
        command: 'pid reused',
      }),
    );
    // Same pid, wrong start time: a reused pid is never killed.
    assert.deepEqual(reapOrphans(dir), []);
    assert.ok(isPidAlive(sleeper.pid!));
    sleeper.kill('SIGKILL');
  });
});
