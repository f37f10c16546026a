/**
 * API keys (D6): revoking a key takes effect on the very next request of every API
 * process (nothing caches keys), and no log line ever holds a key's secret, only its `key_` id.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { runCli } from '../../../cli/run-cli';
import { hashKey, issueKey, revokeKey } from '../../../store/accounts';
import { newAccount } from '../../support/accounts';
import { expectError, expectRefusedWithin2s } from '../../support/api-assert';
import { greetingWorkflow, publish, waitForRun } from '../../support/fixtures';
import { call } from '../../support/http';
import { openSse } from '../../support/sse';
import { startPeerService, startService, type TestService } from '../../support/service';

const expect401 = (res: Awaited<ReturnType<typeof call>>) =>
  expectError(res, { status: 401, type: 'authentication_error', code: 'invalid_api_key' });

describe('API keys (D6)', function () {
  this.timeout(120_000);

  describe('revocation across API processes', () => {
    let a: TestService;
    let b: TestService;
    before(async () => {
      a = await startService();
      b = await startPeerService(a);
    });
    after(async () => {
      await b?.close();
      await a?.close();
    });

    it('refuses a revoked key within 2 s in every API process (D6)', async () => {
      const acct = await newAccount(a.store.collections);
      await publish(a.url, acct.key, greetingWorkflow('greet'));
      const started = await call(b.url, 'POST', '/api/v1/responses', {
        key: acct.key,
        body: { workflowId: 'greet', inputs: { name: 'x' } },
      });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      const runPath = `/api/v1/runs/${started.body.run_id}`;
      // Both processes have just served this key.
      assert.equal((await call(a.url, 'GET', runPath, { key: acct.key })).status, 200);
      assert.equal((await call(b.url, 'GET', runPath, { key: acct.key })).status, 200);

      // Revoked through the operator CLI, which talks to the database only.
      const out: string[] = [];
      assert.equal(
        await runCli(['keys', 'revoke', acct.keyId], {
          collections: a.store.collections,
          out: (l) => out.push(l),
          err: () => undefined,
        }),
        0,
      );
      const revokedAt = Date.now();
      for (const api of [a, b])
        await expectRefusedWithin2s(
          async () => (await call(api.url, 'GET', runPath, { key: acct.key })).status,
          revokedAt,
        );
      expect401(await call(b.url, 'GET', runPath, { key: acct.key }));
      expect401(await call(a.url, 'GET', runPath, { key: acct.key }));
      expect401(
        await call(b.url, 'POST', '/api/v1/responses', {
          key: acct.key,
          body: { workflowId: 'greet', inputs: { name: 'x' } },
        }),
      );
      const stream = await openSse(`${b.url}${runPath}/stream`, { key: acct.key });
      assert.equal(stream.status, 401);
      // The account's other keys keep working, and the run itself is unaffected.
      const { secret } = await issueKey(a.store.collections, acct.accountId);
      assert.equal((await call(b.url, 'GET', runPath, { key: secret })).status, 200);
      assert.equal((await waitForRun(a.url, secret, started.body.run_id)).status, 'completed');
    });
  });

  it('never logs a secret, even at debug level; log lines name the key by its key_ id', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const svc = await startService({ env: { LOG_LEVEL: 'debug' }, logDestination: destination });
    try {
      const acct = await newAccount(svc.store.collections);
      const { secret: revoked, key: revokedDoc } = await issueKey(
        svc.store.collections,
        acct.accountId,
      );
      await revokeKey(svc.store.collections, revokedDoc._id);
      await publish(svc.url, acct.key, greetingWorkflow('greet'));
      const started = await call(svc.url, 'POST', '/api/v1/responses', {
        key: acct.key,
        body: { workflowId: 'greet', inputs: { name: 'x' } },
      });
      assert.equal(started.status, 202);
      await waitForRun(svc.url, acct.key, started.body.run_id);
      const stream = await openSse(`${svc.url}/api/v1/runs/${started.body.run_id}/stream`, {
        key: acct.key,
      });
      await stream.closed;
      // Secrets where they do not belong: a query string, a malformed header, a revoked key, a body.
      await call(svc.url, 'GET', `/api/v1/runs/${started.body.run_id}?api_key=${acct.key}`, {
        key: acct.key,
      });
      expect401(
        await call(svc.url, 'GET', '/api/v1/runs/run_x', {
          headers: { authorization: `Bearer ${acct.key} trailing` },
        }),
      );
      expect401(
        await call(svc.url, 'GET', '/api/v1/runs/run_x', { headers: { authorization: acct.key } }),
      );
      expect401(await call(svc.url, 'GET', '/api/v1/runs/run_x', { key: revoked }));
      await call(svc.url, 'POST', '/api/v1/responses', {
        key: acct.key,
        body: { workflowId: acct.key, inputs: { secret: acct.key } },
      });
      await call(svc.url, 'POST', '/api/v1/responses', {
        key: acct.key,
        body: `{"workflowId": "${acct.key}"`,
      });
      await new Promise((r) => setTimeout(r, 100)); // let the last lines reach the destination

      assert.ok(lines.length >= 8, `only ${lines.length} log lines`);
      for (const secret of [acct.key, revoked]) {
        const body = secret.slice('wrs_sk_'.length);
        for (const needle of [secret, body, hashKey(secret)]) {
          const leaks = lines.filter((l) => l.includes(needle));
          assert.deepEqual(
            leaks,
            [],
            `a log line holds ${needle === secret ? 'a secret' : needle === body ? "a secret's random part" : "a key's hash"}`,
          );
        }
      }
      const parsed = lines.map((l) => JSON.parse(l));
      const requests = parsed.filter((l) => l.msg === 'request');
      assert.ok(
        requests.some(
          (l) => l.key_id === acct.keyId && l.path === '/api/v1/responses' && l.status === 202,
        ),
        JSON.stringify(requests),
      );
      assert.ok(requests.some((l) => l.status === 401 && l.key_id === undefined));
      for (const l of requests)
        if (l.key_id !== undefined) assert.match(l.key_id, /^key_[0-9A-Z]{26}$/);
    } finally {
      await svc.close();
    }
  });
});
