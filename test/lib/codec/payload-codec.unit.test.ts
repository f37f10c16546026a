import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { DefaultPayloadConverter, ValueError, type Payload } from '@temporalio/common';
import { loadConfig } from '../../../config';
import { payloadsFromJson, payloadsToJson } from '../../../lib/codec/json';
import {
  ENCRYPTED_ENCODING,
  EncryptionCodec,
  KEY_ID_METADATA,
  RUN_ID_METADATA,
  RunDeletedError,
  decryptPayload,
  keyRing,
} from '../../../lib/codec/payload-codec';
import { RunSecrets, runOfWorkflowId } from '../../../lib/codec/run-keys';

const converter = new DefaultPayloadConverter();
const secret = {
  prompt: 'Summarise the contract of ACME Corp',
  api: 'https://hooks.example.com/x?token=s3cret',
};
const key = (id: string) => ({ id, key: randomBytes(32) });
const meta = (p: Payload, name: string) => Buffer.from(p.metadata?.[name] ?? []).toString();

describe('payload codec (D32)', () => {
  it('seals a payload whole under the newest key, naming it, and opens it again', async () => {
    const [k1, k2] = [key('k1'), key('k2')];
    const codec = new EncryptionCodec(async () => keyRing([k1, k2]));
    const plain = converter.toPayload(secret);
    const [sealed] = await codec.encode([plain]);
    assert.equal(meta(sealed, 'encoding'), ENCRYPTED_ENCODING);
    assert.equal(meta(sealed, KEY_ID_METADATA), 'k2');
    assert.ok(
      !Buffer.from(sealed.data!).toString('latin1').includes('ACME'),
      'no plaintext in the sealed bytes',
    );
    assert.ok(
      !Buffer.from(sealed.data!).toString('latin1').includes('json/plain'),
      'the inner metadata is sealed too',
    );
    const [opened] = await codec.decode([sealed]);
    assert.deepEqual(converter.fromPayload(opened), secret);
    // A fresh nonce per payload: the same value never seals to the same bytes.
    const [again] = await codec.encode([plain]);
    assert.notDeepEqual(Buffer.from(again.data!), Buffer.from(sealed.data!));
  });

  it('rotation: a payload sealed with an older key still opens once a newer key seals', async () => {
    const [old, next] = [key('2025-01'), key('2026-01')];
    const before = new EncryptionCodec(async () => keyRing([old]));
    const after = new EncryptionCodec(async () => keyRing([old, next]));
    const [sealedBefore] = await before.encode([converter.toPayload('hello')]);
    const [sealedAfter] = await after.encode([converter.toPayload('hello')]);
    assert.equal(meta(sealedAfter, KEY_ID_METADATA), '2026-01');
    assert.equal(converter.fromPayload((await after.decode([sealedBefore]))[0]), 'hello');
    // A process that was not given the new key cannot open what it sealed, and says which key it lacks.
    await assert.rejects(
      before.decode([sealedAfter]),
      (err: Error) => err instanceof ValueError && /unknown key '2026-01'/.test(err.message),
    );
  });

  it('refuses a tampered payload or a swapped key id, and passes plaintext payloads through', async () => {
    const ring = keyRing([key('a'), key('b')]);
    const codec = new EncryptionCodec(async () => ring);
    const [sealed] = await codec.encode([converter.toPayload(secret)]);
    const flipped = Buffer.from(sealed.data!);
    flipped[20] ^= 1;
    assert.throws(() => decryptPayload({ ...sealed, data: flipped }, ring), ValueError);
    const relabelled = {
      ...sealed,
      metadata: { ...sealed.metadata, [KEY_ID_METADATA]: Buffer.from('a') },
    };
    assert.throws(() => decryptPayload(relabelled, ring), /does not authenticate under key 'a'/);
    const plain = converter.toPayload('from before D32');
    assert.deepEqual(decryptPayload(plain, ring), plain);
  });

  it('round-trips the codec-server JSON form', async () => {
    const codec = new EncryptionCodec(async () => keyRing([key('k')]));
    const sealed = await codec.encode([converter.toPayload(secret)]);
    const json = JSON.parse(JSON.stringify(payloadsToJson(sealed)));
    assert.equal(typeof json.payloads[0].data, 'string');
    assert.deepEqual(
      converter.fromPayload((await codec.decode(payloadsFromJson(json)))[0]),
      secret,
    );
  });

  it('reads PAYLOAD_KEYS strictly, keeping their order', () => {
    const a = randomBytes(32).toString('base64');
    const b = randomBytes(32).toString('base64');
    const config = loadConfig({ PAYLOAD_KEYS: ` old:${a}, new:${b} ` });
    assert.deepEqual(
      config.codec.keys.map((k) => k.id),
      ['old', 'new'],
    );
    assert.equal(keyRing(config.codec.keys).current.id, 'new');
    assert.throws(
      () => loadConfig({ PAYLOAD_KEYS: `short:${randomBytes(16).toString('base64')}` }),
      /'short' is 16 bytes/,
    );
    assert.throws(() => loadConfig({ PAYLOAD_KEYS: `x:${a},x:${b}` }), /appears twice/);
    assert.throws(() => loadConfig({ PAYLOAD_KEYS: a }), /id:base64key/);
    const production = { NODE_ENV: 'production', FILE_URL_SECRET: 'x'.repeat(32) };
    assert.throws(() => loadConfig(production), /PAYLOAD_KEYS is required/);
    assert.throws(
      () => loadConfig({ ...production, PAYLOAD_KEYS: `k:${a}`, PAYLOAD_ENCRYPTION: 'false' }),
      /PAYLOAD_ENCRYPTION cannot be false/,
    );
    assert.equal(loadConfig({ ...production, PAYLOAD_KEYS: `k:${a}` }).codec.enabled, true);
  });
});

describe('per-run payload keys (D39)', () => {
  const RUN = 'run_01M89R6523JD45ACPBHPF7940W';
  const context = (workflowId: string) => ({
    type: 'workflow' as const,
    namespace: 'default',
    workflowId,
  });

  function setup() {
    const secrets = new Map<string, Buffer | undefined>([[RUN, randomBytes(32)]]);
    const lookups: string[] = [];
    const runSecrets = new RunSecrets(async (runId) => {
      lookups.push(runId);
      return secrets.has(runId) ? secrets.get(runId) : null;
    });
    const k1 = key('k1');
    const codec = new EncryptionCodec(async () => keyRing([k1]), runSecrets);
    return { secrets, lookups, codec, k1 };
  }

  it("seals a run's payloads (its own workflow and its webhook child) under the run's key, not the configured one", async () => {
    const { codec, k1 } = setup();
    for (const workflowId of [RUN, `${RUN}-webhook`]) {
      const [sealed] = await codec.encode([converter.toPayload(secret)], context(workflowId));
      assert.equal(meta(sealed, RUN_ID_METADATA), RUN);
      assert.equal(meta(sealed, KEY_ID_METADATA), 'k1');
      assert.throws(
        () => decryptPayload(sealed, keyRing([k1])),
        RunDeletedError,
        'the configured key alone opens nothing',
      );
      assert.deepEqual(converter.fromPayload((await codec.decode([sealed]))[0]), secret);
    }
    // Other workflows (the retention schedule) and payloads without a context keep the configured key.
    const [other] = await codec.encode([converter.toPayload(secret)], context('wrs-retention'));
    assert.equal(meta(other, RUN_ID_METADATA), '');
    assert.deepEqual(converter.fromPayload(decryptPayload(other, keyRing([k1]))), secret);
  });

  it('once the run is deleted, nothing opens its payloads and nothing new of it can be opened', async () => {
    const { secrets, codec } = setup();
    const [sealed] = await codec.encode([converter.toPayload(secret)], context(RUN));
    secrets.delete(RUN); // the record, and with it the secret, is gone
    codec.forgetRun(RUN);
    await assert.rejects(codec.decode([sealed]), RunDeletedError);
    const [forOperators] = await codec.decodeForOperators([sealed]);
    assert.deepEqual(forOperators, sealed, 'the codec server hands it back still sealed');
    // What a task of it still writes (the failure of a task that could not open its input) is
    // sealed, never refused (a throw there stopped the worker), and opens for no one.
    const [late] = await codec.encode([converter.toPayload(secret)], context(RUN));
    assert.equal(meta(late, RUN_ID_METADATA), RUN);
    await assert.rejects(codec.decode([late]), RunDeletedError);
    const revived = setup(); // even with a secret for the run again, the throwaway key opens it
    await assert.rejects(revived.codec.decode([late]), /does not authenticate/);
    // A fresh process that never knew the secret cannot open it either.
    const fresh = setup();
    fresh.secrets.delete(RUN);
    await assert.rejects(fresh.codec.decode([sealed]), RunDeletedError);
  });

  it('a run recorded before per-run keys keeps the configured key', async () => {
    const { secrets, codec, k1 } = setup();
    secrets.set(RUN, undefined);
    const [sealed] = await codec.encode([converter.toPayload(secret)], context(RUN));
    assert.equal(meta(sealed, RUN_ID_METADATA), '');
    assert.deepEqual(converter.fromPayload(decryptPayload(sealed, keyRing([k1]))), secret);
  });

  it('asks the store for a secret once per TTL, and keeps a cached one through a failed lookup', async () => {
    let calls = 0;
    let fail = false;
    const s = randomBytes(32);
    const runSecrets = new RunSecrets(async () => {
      calls++;
      if (fail) throw new Error('store down');
      return s;
    }, 50);
    assert.equal(await runSecrets.get(RUN), s);
    assert.equal(await runSecrets.get(RUN), s);
    assert.equal(calls, 1);
    await new Promise((r) => setTimeout(r, 60));
    fail = true;
    assert.equal(await runSecrets.get(RUN), s, 'stale beats failing during a blip');
    assert.equal(calls, 2);
    runSecrets.forget(RUN);
    assert.equal(await runSecrets.get(RUN), null);
  });

  it('a secret never held: the API fails at once; a worker waits out a blip, then fails', async () => {
    const s = randomBytes(32);
    let failures = 0;
    const flaky = (times: number) => {
      let left = times;
      return async () => {
        if (left-- > 0) {
          failures++;
          throw new Error('store down');
        }
        return s;
      };
    };
    await assert.rejects(new RunSecrets(flaky(1)).get(RUN), /store down/);
    const anyFailure = () => true;
    assert.equal(
      await new RunSecrets(flaky(2), 50, { forMs: 5_000, retryable: anyFailure }).get(RUN),
      s,
    );
    failures = 0;
    await assert.rejects(
      new RunSecrets(flaky(100), 50, { forMs: 250, retryable: anyFailure }).get(RUN),
      /store down/,
    );
    assert.ok(failures >= 2 && failures < 10, `${failures} reads in a 250 ms window`);
  });

  it('maps only run workflow ids to their run', () => {
    assert.equal(runOfWorkflowId(RUN), RUN);
    assert.equal(runOfWorkflowId(`${RUN}-webhook`), RUN);
    assert.equal(runOfWorkflowId('wrs-retention'), null);
    assert.equal(runOfWorkflowId(`${RUN}x`), null);
    assert.equal(runOfWorkflowId(undefined), null);
  });
});
