/**
 * D6: a key is found by its secret's hash through an entry whose `_id` is that hash (store/
 * accounts.ts findLiveKey), never by a filter on `hash`, which the embedded FerretDB answers by
 * decoding every key. Keys issued before the entries existed get theirs when a store opens.
 */
import assert from 'node:assert/strict';
import { connectStore } from '../../store/db';
import { createAccount, findLiveKey, isKeyLive, issueKey, revokeKey } from '../../store/accounts';
import { waitFor } from '../support/http';
import { testStack } from '../support/stack';
import { useTestStore } from '../support/store';

describe('store: API keys by hash (D6)', function () {
  this.timeout(60_000);
  const ctx = useTestStore();

  it('finds a live key by its secret, and neither an unknown nor a revoked one', async () => {
    const c = ctx.store.collections;
    const account = await createAccount(c, { name: 'keys' });
    const { secret, key } = await issueKey(c, account._id);
    assert.deepEqual(await c.apiKeyHashes.findOne({ _id: key.hash }), {
      _id: key.hash,
      key_id: key._id,
    });
    assert.equal((await findLiveKey(c, secret))?._id, key._id);
    assert.equal(await findLiveKey(c, `${secret.slice(0, -1)}x`), null);
    assert.equal(await isKeyLive(c, key._id), true);
    assert.equal(await revokeKey(c, key._id), true);
    // D6 promises the refusal within 2 s: under the suite's load the embedded FerretDB once read
    // the key back unrevoked right after the update that reported it modified.
    const refused = async () =>
      (await findLiveKey(c, secret)) === null && !(await isKeyLive(c, key._id)) ? true : undefined;
    await waitFor(refused, { timeoutMs: 2_000, what: 'the revoked key refused' });
  });

  it('gives a key issued before the hash entries its entry when a store opens', async () => {
    const c = ctx.store.collections;
    const account = await createAccount(c, { name: 'older keys' });
    const older = await Promise.all([issueKey(c, account._id), issueKey(c, account._id)]);
    // As a release before the entries left them.
    await c.apiKeyHashes.deleteMany({ key_id: { $in: older.map(({ key }) => key._id) } });
    assert.equal(await findLiveKey(c, older[0].secret), null);

    const { db } = ctx.store;
    const { stack } = await testStack();
    const reopened = await connectStore({ uri: stack.mongo.uri, dbName: db.databaseName });
    try {
      for (const { secret, key } of older)
        assert.equal((await findLiveKey(reopened.collections, secret))?._id, key._id);
    } finally {
      await reopened.close();
    }
  });
});
