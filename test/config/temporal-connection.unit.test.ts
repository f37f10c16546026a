// The Temporal connection options (TLS, mTLS, API key, several frontends) built from configuration.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../config';
import {
  connectFirst,
  temporalConnectOptions,
  type TemporalConnectOptions,
} from '../../config/temporal-connection';

describe('config: Temporal connection', () => {
  it('is plain gRPC to one address by default', () => {
    const config = loadConfig({});
    assert.deepEqual(temporalConnectOptions(config.temporal), { address: '127.0.0.1:7233' });
  });

  it('uses mTLS with a CA and a client certificate from files', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-tls-'));
    for (const name of ['ca.pem', 'client.pem', 'client.key'])
      fs.writeFileSync(path.join(dir, name), `${name} bytes`);
    const config = loadConfig({
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_TLS_CA_FILE: path.join(dir, 'ca.pem'),
      TEMPORAL_TLS_CERT_FILE: path.join(dir, 'client.pem'),
      TEMPORAL_TLS_KEY_FILE: path.join(dir, 'client.key'),
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    });
    const options = temporalConnectOptions(config.temporal);
    assert.equal(options.tls?.serverRootCACertificate?.toString(), 'ca.pem bytes');
    assert.equal(options.tls?.clientCertPair?.crt.toString(), 'client.pem bytes');
    assert.equal(options.tls?.clientCertPair?.key.toString(), 'client.key bytes');
    assert.equal(options.tls?.serverNameOverride, 'temporal.internal');
    assert.equal(options.apiKey, undefined);
  });

  it('uses an API key over TLS with the namespace header (Temporal Cloud)', () => {
    const config = loadConfig({
      TEMPORAL_ADDRESS: 'us-east-1.aws.api.temporal.io:7233',
      TEMPORAL_NAMESPACE: 'wrs.acct',
      TEMPORAL_API_KEY: 'key-1',
    });
    assert.deepEqual(temporalConnectOptions(config.temporal), {
      address: 'us-east-1.aws.api.temporal.io:7233',
      tls: {},
      apiKey: 'key-1',
      metadata: { 'temporal-namespace': 'wrs.acct' },
    });
  });

  it('refuses a client certificate without its key', () => {
    assert.throws(
      () => loadConfig({ TEMPORAL_TLS_CERT_FILE: '/x.pem' }),
      /TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE go together/,
    );
  });

  it('tries several frontends in order and uses the first that connects', async () => {
    const config = loadConfig({ TEMPORAL_ADDRESS: 'a:7233, b:7233 ,c:7233' });
    assert.deepEqual(config.temporal.addresses, ['a:7233', 'b:7233', 'c:7233']);
    const tried: string[] = [];
    const connect = async (o: TemporalConnectOptions) => {
      tried.push(o.address);
      if (o.address !== 'b:7233') throw new Error(`${o.address} refused`);
      return o.address;
    };
    assert.equal(await connectFirst(config.temporal, connect), 'b:7233');
    assert.deepEqual(tried, ['a:7233', 'b:7233']);
    await assert.rejects(
      connectFirst(loadConfig({ TEMPORAL_ADDRESS: 'a:1,c:1' }).temporal, connect),
      /c:1 refused/,
    );
  });
});
