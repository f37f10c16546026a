/**
 * A process starting while Temporal is down (lib/temporal-start.ts): the API's client connection and
 * the worker's native one both wait for the server instead of failing, and connect once it answers;
 * what waiting cannot mend fails at once. On a Temporal dev server of the test's own, started late.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../../config';
import { connectTemporalWhenReachable, isTemporalUnreachable } from '../../lib/temporal-start';
import { freePort, startTemporal, type TemporalServer } from '../../tools/stack';

describe('lib: connecting to Temporal while it is down', function () {
  this.timeout(90_000);
  let dataDir: string;
  let temporal: TemporalServer | undefined;
  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wrs-temporal-start-'));
  });
  after(async () => {
    await temporal?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('waits, with the client and with the native connection, and connects once the server answers', async () => {
    const port = await freePort();
    const config = loadConfig({ TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
    const waits = { client: [] as unknown[], native: [] as unknown[] };
    let bothWaited!: () => void;
    const waited = new Promise<void>((resolve) => (bothWaited = resolve));
    const onWait = (kind: keyof typeof waits) => (err: unknown) => {
      waits[kind].push(err);
      if (waits.client.length && waits.native.length) bothWaited();
    };
    const client = connectTemporalWhenReachable(
      config.temporal,
      (o) => Connection.connect({ ...o, connectTimeout: 1_000 }),
      onWait('client'),
    );
    const native = connectTemporalWhenReachable(
      config.temporal,
      (o) => NativeConnection.connect(o),
      onWait('native'),
    );
    await waited;
    temporal = await startTemporal({ dataDir, port, headless: true });
    const [c, n] = await Promise.all([client, native]);
    try {
      assert.ok((await c.workflowService.getSystemInfo({})).serverVersion);
      assert.ok((await n.workflowService.getSystemInfo({})).serverVersion);
    } finally {
      await Promise.all([c.close(), n.close()]);
    }
    for (const err of [...waits.client, ...waits.native])
      assert.ok(isTemporalUnreachable(err), String(err));
  });

  it('fails at once where waiting cannot help (a certificate file that is not there)', async () => {
    const config = loadConfig({
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      TEMPORAL_TLS: 'true',
      TEMPORAL_TLS_CA_FILE: path.join(dataDir, 'missing-ca.pem'),
    });
    let waited = 0;
    await assert.rejects(
      connectTemporalWhenReachable(
        config.temporal,
        (o) => NativeConnection.connect(o),
        () => waited++,
      ),
      { code: 'ENOENT' },
    );
    assert.equal(waited, 0);
  });
});
