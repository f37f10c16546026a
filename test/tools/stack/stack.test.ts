import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { MongoClient } from 'mongodb';
import {
  ensureFerretDb,
  ensureTemporal,
  freePort,
  isPidAlive,
  isPortFree,
  startFerretDb,
  startStack,
  startTemporal,
} from '../../../tools/stack';

function portOf(address: string): number {
  return Number(new URL(address.includes('://') ? address : `tcp://${address}`).port);
}

async function withMongo<T>(uri: string, fn: (client: MongoClient) => Promise<T>): Promise<T> {
  const client = new MongoClient(uri, { directConnection: true, serverSelectionTimeoutMS: 5000 });
  try {
    await client.connect();
    return await fn(client);
  } finally {
    await client.close();
  }
}

describe('stack (real Temporal dev server + FerretDB)', function () {
  let root: string;
  let temporalBin: string;
  let ferretBin: string;

  before(async function () {
    // Already built before mocha started (pretest, test/support/hooks.ts): this only resolves the paths.
    [temporalBin, ferretBin] = await Promise.all([ensureTemporal(), ensureFerretDb()]);
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-stack-test-'));
  });

  after(function () {
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('starts both servers, they answer, and stop frees pids and ports', async function () {
    const stack = await startStack({
      dataDir: path.join(root, 'both'),
      headless: true,
      searchAttributes: { WrsTestKeyword: 'Keyword', WrsTestInt: 'Int' },
    });
    const { temporal, mongo } = stack;
    const ports = [portOf(temporal.address), portOf(mongo.uri)];
    try {
      assert.equal(temporal.uiUrl, null);
      // Go's collector is tuned for the shared cores (tools/stack/go-runtime.ts) in both servers.
      for (const pid of [temporal.pid, mongo.pid])
        assert.match(fs.readFileSync(`/proc/${pid}/environ`, 'utf8'), /(^|\0)GOGC=\d+\0/);
      const connection = await Connection.connect({ address: temporal.address });
      try {
        const ns = await connection.workflowService.describeNamespace({ namespace: 'default' });
        assert.equal(ns.namespaceInfo?.name, 'default');
        const sa = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
        assert.ok(sa.customAttributes, 'custom search attributes returned');
        assert.ok('WrsTestKeyword' in sa.customAttributes);
        assert.ok('WrsTestInt' in sa.customAttributes);
      } finally {
        await connection.close();
      }

      await withMongo(mongo.uri, async (client) => {
        const coll = client.db('wrs_test').collection<{ _id: string; n: number }>('docs');
        await coll.insertOne({ _id: 'a', n: 42 });
        assert.deepEqual(await coll.findOne({ _id: 'a' }), { _id: 'a', n: 42 });
      });
    } finally {
      await stack.stop();
    }

    assert.equal(isPidAlive(temporal.pid), false, 'temporal pid gone');
    assert.equal(isPidAlive(mongo.pid), false, 'ferretdb pid gone');
    assert.throws(() => process.kill(temporal.pid, 0));
    assert.throws(() => process.kill(mongo.pid, 0));
    for (const port of ports) assert.equal(await isPortFree(port), true, `port ${port} free`);
    await stack.stop(); // idempotent
  });

  it('FerretDB keeps data across a restart on the same dir, and after a SIGKILL', async function () {
    const dataDir = path.join(root, 'ferret-restart');
    const port = await freePort();

    const first = await startFerretDb({ dataDir, port, binary: ferretBin });
    await withMongo(first.uri, (c) =>
      c
        .db('wrs_test')
        .collection('docs')
        .insertOne({ _id: 'persist' as never, v: 1 }),
    );
    await first.stop();
    assert.equal(isPidAlive(first.pid), false);

    const second = await startFerretDb({ dataDir, port, binary: ferretBin });
    try {
      const doc = await withMongo(second.uri, (c) =>
        c
          .db('wrs_test')
          .collection('docs')
          .findOne({ _id: 'persist' as never }),
      );
      assert.deepEqual(doc, { _id: 'persist', v: 1 });
      await withMongo(second.uri, (c) =>
        c
          .db('wrs_test')
          .collection('docs')
          .insertOne({ _id: 'crash' as never, v: 2 }),
      );
    } finally {
      await second.kill();
    }
    assert.equal(isPidAlive(second.pid), false);

    const third = await startFerretDb({ dataDir, port, binary: ferretBin });
    try {
      const n = await withMongo(third.uri, (c) =>
        c.db('wrs_test').collection('docs').countDocuments(),
      );
      assert.equal(n, 2);
    } finally {
      await third.stop();
    }
  });

  it('Temporal restarts on the same SQLite file with a custom namespace', async function () {
    const dataDir = path.join(root, 'temporal-restart');
    const port = await freePort();
    const opts = {
      dataDir,
      port,
      headless: true,
      namespace: 'wrs-test',
      binary: temporalBin,
      searchAttributes: { WrsTestKeyword: 'Keyword' as const },
    };

    const first = await startTemporal(opts);
    assert.equal(first.address, `127.0.0.1:${port}`);
    await first.stop();
    const second = await startTemporal(opts);
    try {
      const connection = await Connection.connect({ address: second.address });
      try {
        const ns = await connection.workflowService.describeNamespace({ namespace: 'wrs-test' });
        assert.equal(ns.namespaceInfo?.name, 'wrs-test');
      } finally {
        await connection.close();
      }
    } finally {
      await second.stop();
    }
    assert.ok(fs.existsSync(path.join(dataDir, 'temporal.db')));
  });

  it('rejects with the log tail when the server dies before it is ready', async function () {
    // Occupy the port so FerretDB fails to listen and exits.
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      await assert.rejects(
        startFerretDb({ dataDir: path.join(root, 'ferret-busy'), port, binary: ferretBin }),
        (err: Error) => {
          assert.match(err.message, /ferretdb exited .* before it was ready/);
          assert.match(err.message, /address already in use/);
          return true;
        },
      );
    } finally {
      blocker.close();
    }
  });
});
