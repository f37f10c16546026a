/**
 * A process starting while the store is down (store/db.ts connectStoreWhenReachable): it waits for
 * the database instead of exiting into an orchestrator's growing restart back-off, and fails at once
 * on what waiting cannot mend. On a FerretDB of the test's own, stopped and started again.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectStoreWhenReachable, isStoreUnreachable } from '../../store/db';
import { startFerretDb, type FerretDbServer } from '../../tools/stack';

describe('store: connecting while the database is down', function () {
  this.timeout(60_000);
  let dataDir: string;
  let ferret: FerretDbServer | undefined;
  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wrs-store-connect-'));
  });
  after(async () => {
    await ferret?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('waits while the database is unreachable and connects once it is back', async () => {
    ferret = await startFerretDb({ dataDir });
    const { uri } = ferret;
    const port = Number(new URL(uri).port);
    await ferret.stop();
    ferret = undefined;

    const waits: unknown[] = [];
    let firstWait!: () => void;
    const waiting = new Promise<void>((resolve) => (firstWait = resolve));
    const connecting = connectStoreWhenReachable({ uri, dbName: 'wrs_connect' }, (err) => {
      waits.push(err);
      firstWait();
    });
    await waiting;
    ferret = await startFerretDb({ dataDir, port });
    const store = await connecting;
    try {
      await store.collections.runs.insertOne({ _id: 'run_probe' } as never);
      assert.ok(await store.collections.runs.findOne({ _id: 'run_probe' }));
    } finally {
      await store.close();
    }
    assert.ok(waits.length >= 1);
    assert.ok(waits.every(isStoreUnreachable), String(waits[0]));
  });

  it('fails at once where waiting cannot help (a URI of another scheme)', async () => {
    let waited = 0;
    await assert.rejects(
      connectStoreWhenReachable({ uri: 'postgres://127.0.0.1:1/', dbName: 'x' }, () => waited++),
      { name: 'MongoParseError' },
    );
    assert.equal(waited, 0);
  });
});
