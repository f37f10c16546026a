/** Signing without servers: file links (lib/files/signing.ts, D19) and webhook signatures (lib/webhooks/signature.ts, D20). */
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { checkFileSignature, signFileUrl, signedUrlAt } from '../../../lib/files/signing';
import { signWebhook, signWebhookParts } from '../../../lib/webhooks/signature';

const SECRET = 'x'.repeat(32);
const NOW = Date.UTC(2031, 0, 1);

function query(url: string) {
  const u = new URL(url);
  return {
    expires: u.searchParams.get('expires') ?? undefined,
    sig: u.searchParams.get('sig') ?? undefined,
    path: u.pathname,
  };
}

describe('file links (lib/files/signing.ts, D19)', () => {
  it('signs a link that verifies until it expires', () => {
    const url = signFileUrl({
      baseUrl: 'https://api.example/',
      secret: SECRET,
      fileId: 'file_1',
      ttlSeconds: 60,
      nowMs: NOW,
    });
    const q = query(url);
    assert.equal(q.path, '/files/file_1/content');
    assert.equal(checkFileSignature(SECRET, 'file_1', q.expires, q.sig, NOW), 'ok');
    assert.equal(
      checkFileSignature(SECRET, 'file_1', q.expires, q.sig, NOW + 61_000),
      'url_expired',
    );
  });

  it('refuses a link for another file, another expiry or another secret, whatever its expiry', () => {
    const q = query(signedUrlAt('https://api.example', SECRET, 'file_1', NOW / 1000 + 60));
    assert.equal(checkFileSignature(SECRET, 'file_2', q.expires, q.sig, NOW), 'invalid_signature');
    assert.equal(
      checkFileSignature(SECRET, 'file_1', String(Number(q.expires) + 3600), q.sig, NOW),
      'invalid_signature',
    );
    assert.equal(
      checkFileSignature('y'.repeat(32), 'file_1', q.expires, q.sig, NOW),
      'invalid_signature',
    );
    assert.equal(checkFileSignature(SECRET, 'file_1', undefined, q.sig, NOW), 'invalid_signature');
    assert.equal(checkFileSignature(SECRET, 'file_1', '1e9', q.sig, NOW), 'invalid_signature');
  });
});

describe('webhook signatures (lib/webhooks/signature.ts, D20)', () => {
  const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;

  it('verifies with the standardwebhooks reference library', () => {
    const body = JSON.stringify({ id: 'run_1', status: 'completed' });
    const now = Math.floor(Date.now() / 1000);
    const headers = signWebhook(secret, 'msg_1', now, body);
    assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
    assert.deepEqual(new Webhook(secret).verify(body, { ...headers }), JSON.parse(body));
  });

  it('signs a body given in parts (a big run’s, sent as it is read) as the whole, and counts its bytes', async () => {
    const parts = ['{"id":"run_1","output":{"a":[', '"é",', '"x"]}}'];
    const now = Math.floor(Date.now() / 1000);
    async function* read() {
      yield* parts;
    }
    const { headers, length } = await signWebhookParts(secret, 'msg_1', now, read());
    assert.deepEqual(headers, signWebhook(secret, 'msg_1', now, parts.join('')));
    assert.equal(length, Buffer.byteLength(parts.join('')));
  });

  it('fails verification when one byte of the body changes', () => {
    const now = Math.floor(Date.now() / 1000);
    const headers = signWebhook(secret, 'msg_1', now, '{"a":1}');
    assert.throws(() => new Webhook(secret).verify('{"a":2}', { ...headers }));
  });
});

describe('links made for a key (lib/files/signing.ts, D6)', () => {
  const kidOf = (url: string) => new URL(url).searchParams.get('kid') ?? undefined;

  it('names the key, and the signature covers it: no other key, and no key at all, verifies', () => {
    const url = signFileUrl({
      baseUrl: 'https://api.example',
      secret: SECRET,
      fileId: 'file_1',
      ttlSeconds: 60,
      nowMs: NOW,
      keyId: 'key_abc',
    });
    const q = query(url);
    assert.equal(kidOf(url), 'key_abc');
    assert.equal(checkFileSignature(SECRET, 'file_1', q.expires, q.sig, NOW, 'key_abc'), 'ok');
    for (const kid of ['key_abd', undefined, '', 'key_abc.x', ['key_abc']])
      assert.equal(
        checkFileSignature(SECRET, 'file_1', q.expires, q.sig, NOW, kid),
        'invalid_signature',
        String(kid),
      );
    // A keyless link does not verify with a key added.
    const bare = query(signedUrlAt('https://api.example', SECRET, 'file_1', NOW / 1000 + 60));
    assert.equal(
      checkFileSignature(SECRET, 'file_1', bare.expires, bare.sig, NOW, 'key_abc'),
      'invalid_signature',
    );
  });
});
