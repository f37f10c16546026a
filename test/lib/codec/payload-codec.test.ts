import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { DefaultPayloadConverter, ValueError, type Payload } from '@temporalio/common';
import { loadConfig } from '../../../config';
import { payloadsFromJson, payloadsToJson } from '../../../lib/codec/json';
import {
  ENCRYPTED_ENCODING,
  EncryptionCodec,
  KEY_ID_METADATA,
  decryptPayload,
  keyRing,
} from '../../../lib/codec/payload-codec';

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
