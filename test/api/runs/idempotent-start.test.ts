/**
 * Idempotent starts (D18): `Idempotency-Key` on POST /api/v1/responses, async and
 * stream alike. Same key and body: the same run, billed once; another body: 409; concurrent
 * requests: one run; and the crash cases of api/runs/idempotent-start.ts.
 */
import assert from 'node:assert/strict';
import { addCredits } from '../../../store/accounts';
import type { IdempotencyKeyDoc } from '../../../store/documents';
import { generateId, deriveId } from '../../../store/ids';
import { idempotencyId, requestHash } from '../../../store/idempotency';
import { insertRun } from '../../../store/runs';
import {
  NEVER_STARTED_AFTER_MS,
  NEVER_STARTED_ERROR,
  RESUMABLE_FOR_MS,
} from '../../../api/runs/settle-never-started';
import { expectError } from '../../support/api-assert';
import { firstText, greetingWorkflow, publish, waitForRun } from '../../support/fixtures';
import { rawRequest } from '../../support/raw-http';
import { call, waitFor, type ApiResponse } from '../../support/http';
import { events, openSse } from '../../support/sse';
import { startPeerService, type TestService, temporalClient } from '../../support/service';
import { pendingRun } from '../../support/store';
import { useService } from '../../support/use-service';

const HOUR = 60 * 60_000;

describe('idempotent starts (D18)', function () {
  this.timeout(120_000);
  const ctx = useService({ account: false });
  let other: TestService;

  before(async () => {
    other = await startPeerService(ctx.svc);
  });
  after(async () => other?.close());

  /** A fresh account (own rate-limit windows) with the greeting workflow published. */
  async function account(credits = 10) {
    const acct = await ctx.newAccount(credits);
    const published = await publish(ctx.svc.url, acct.key, greetingWorkflow('greet'));
    return { ...acct, published };
  }

  const start = (
    url: string,
    key: string,
    idempotencyKey: string | undefined,
    body: unknown,
  ): Promise<ApiResponse> =>
    call(url, 'POST', '/api/v1/responses', {
      key,
      body,
      headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
    });

  /** The account's Temporal workflows, once visibility lists any. */
  const workflowsOf = (accountId: string) =>
    waitFor(
      async () => {
        const ids: string[] = [];
        for await (const wf of temporalClient(ctx.svc).workflow.list({
          query: `WrsAccountId = "${accountId}"`,
        }))
          ids.push(wf.workflowId);
        return ids.length > 0 ? ids : undefined;
      },
      { intervalMs: 200, what: 'the workflows in Temporal visibility' },
    );

  const runDebits = (accountId: string) =>
    ctx.svc.store.collections.ledger.find({ account_id: accountId, kind: 'run' }).toArray();

  it('answers a repeated async start with the same 202 body and bills the run once', async () => {
    const acct = await account();
    const body = { workflowId: 'greet', inputs: { name: 'Ada' } };
    const first = await start(ctx.svc.url, acct.key, 'order-1', body);
    assert.equal(first.status, 202, JSON.stringify(first.body));
    // The same body with other key order and spacing, on another API process: the same request.
    const again = await start(
      other.url,
      acct.key,
      'order-1',
      `{ "inputs": {"name":"Ada"}, "workflowId": "greet", "stream": false }`,
    );
    assert.equal(again.status, 202, JSON.stringify(again.body));
    assert.deepEqual(again.body, first.body);
    const run = await waitForRun(ctx.svc.url, acct.key, first.body.run_id);
    assert.equal(firstText(run, 'greeting'), 'Hello, Ada!');
    // After the run ended: still the same answer, byte for byte the 202 of the first request.
    const late = await start(ctx.svc.url, acct.key, 'order-1', body);
    assert.equal(late.status, 202);
    assert.deepEqual(late.body, first.body);

    assert.equal(
      await ctx.svc.store.collections.runs.countDocuments({ account_id: acct.accountId }),
      1,
    );
    const debits = await waitFor(async () =>
      (await runDebits(acct.accountId)).length > 0 ? runDebits(acct.accountId) : undefined,
    );
    assert.deepEqual(
      debits.map((e) => e.run_id),
      [first.body.run_id],
    );
    // Another key is another run.
    const fresh = await start(ctx.svc.url, acct.key, 'order-2', body);
    assert.equal(fresh.status, 202);
    assert.notEqual(fresh.body.run_id, first.body.run_id);
  });

  it('answers the same key with another body with 409 idempotency_key_reused, and starts nothing', async () => {
    const acct = await account();
    const first = await start(ctx.svc.url, acct.key, 'k-409', {
      workflowId: 'greet',
      inputs: { name: 'Ada' },
    });
    assert.equal(first.status, 202);
    for (const body of [
      { workflowId: 'greet', inputs: { name: 'Bob' } },
      { workflowId: 'greet', inputs: { name: 'Ada' }, version: 1 },
      { workflowId: 'greet', inputs: { name: 'Ada' }, stream: true },
    ]) {
      const res = await start(other.url, acct.key, 'k-409', body);
      expectError(res, {
        status: 409,
        type: 'invalid_request_error',
        code: 'idempotency_key_reused',
        param: 'Idempotency-Key',
      });
    }
    assert.equal(
      await ctx.svc.store.collections.runs.countDocuments({ account_id: acct.accountId }),
      1,
    );
    // Keys belong to an account: another account's identical key is its own.
    const stranger = await account();
    const theirs = await start(ctx.svc.url, stranger.key, 'k-409', {
      workflowId: 'greet',
      inputs: { name: 'Bob' },
    });
    assert.equal(theirs.status, 202, JSON.stringify(theirs.body));
    assert.notEqual(theirs.body.run_id, first.body.run_id);
  });

  it('answers a repeated streaming start with the same run, streamed from response.created to [DONE]', async () => {
    const acct = await account();
    const body = { workflowId: 'greet', stream: true, inputs: { name: 'Cy' } };
    const headers = { 'idempotency-key': 'stream-1' };
    // Two at once (one per API process), then one after the run ended.
    const [s1, s2] = await Promise.all([
      openSse(`${ctx.svc.url}/api/v1/responses`, { method: 'POST', key: acct.key, body, headers }),
      openSse(`${other.url}/api/v1/responses`, { method: 'POST', key: acct.key, body, headers }),
    ]);
    await Promise.all([s1.closed, s2.closed]);
    const s3 = await openSse(`${other.url}/api/v1/responses`, {
      method: 'POST',
      key: acct.key,
      body,
      headers,
    });
    await s3.closed;
    const [e1, e2, e3] = [events(s1), events(s2), events(s3)];
    assert.equal(e1[0].type, 'response.created', JSON.stringify(e1));
    const runId = e1[0].response.run_id;
    assert.equal(e1.at(-1).type, 'response.completed', JSON.stringify(e1));
    for (const [i, e] of [e2, e3].entries()) {
      assert.deepEqual(e, e1, `stream ${i + 2} differs: ${JSON.stringify(e)}`);
    }
    for (const s of [s1, s2, s3]) assert.equal(s.frames.at(-1)?.data, '[DONE]');
    assert.equal(
      await ctx.svc.store.collections.runs.countDocuments({ account_id: acct.accountId }),
      1,
    );
    assert.equal(
      firstText(await waitForRun(ctx.svc.url, acct.key, runId), 'greeting'),
      'Hello, Cy!',
    );
    const debits = await waitFor(async () =>
      (await runDebits(acct.accountId)).length > 0 ? runDebits(acct.accountId) : undefined,
    );
    assert.deepEqual(
      debits.map((e) => e.run_id),
      [runId],
    );
  });

  it('starts one run for 20 concurrent requests with the same key, on two API processes', async () => {
    const acct = await account();
    const body = { workflowId: 'greet', inputs: { name: 'Many' } };
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        start(i % 2 ? ctx.svc.url : other.url, acct.key, 'burst', body),
      ),
    );
    for (const res of answers) assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(
      new Set(answers.map((r) => JSON.stringify(r.body))).size,
      1,
      'every answer is the same 202 body',
    );
    const runId = answers[0].body.run_id;
    assert.equal(
      await ctx.svc.store.collections.runs.countDocuments({ account_id: acct.accountId }),
      1,
    );
    await waitForRun(ctx.svc.url, acct.key, runId);
    const debits = await waitFor(async () =>
      (await runDebits(acct.accountId)).length > 0 ? runDebits(acct.accountId) : undefined,
    );
    assert.deepEqual(
      debits.map((e) => e._id),
      [deriveId('led', runId)],
    );
    // And one Temporal workflow.
    assert.deepEqual(await workflowsOf(acct.accountId), [runId]);
  });

  it('refuses a malformed Idempotency-Key with a 400 envelope and starts nothing', async () => {
    const acct = await account();
    const body = { workflowId: 'greet', inputs: { name: 'x' } };
    for (const bad of ['', 'has space', 'x'.repeat(256), 'tab\there']) {
      const res = await start(ctx.svc.url, acct.key, bad, body);
      expectError(res, {
        status: 400,
        type: 'invalid_request_error',
        code: 'invalid_idempotency_key',
        param: 'Idempotency-Key',
      });
    }
    // Bytes fetch cannot send: non-ASCII, and a bare CR or LF trying to smuggle a header in.
    const raw = async (value: Buffer) => {
      const payload = JSON.stringify(body);
      const head = Buffer.concat([
        Buffer.from(
          `POST /api/v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${acct.key}\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${payload.length}\r\nConnection: close\r\nIdempotency-Key: `,
        ),
        value,
        Buffer.from(`\r\n\r\n${payload}`),
      ]);
      return rawRequest(ctx.svc.url, head);
    };
    const nonAscii = await raw(Buffer.from('caf\xe9', 'latin1'));
    assert.equal(nonAscii.status, 400, JSON.stringify(nonAscii.body));
    assert.equal(nonAscii.body.error.code, 'invalid_idempotency_key');
    // Node's HTTP parser refuses these before the app sees them, with the envelope too (api/server.ts).
    for (const value of [
      Buffer.from('a\rX-Injected: 1'),
      Buffer.from('a\nX-Injected: 1'),
      Buffer.from('a\0b'),
    ]) {
      const res = await raw(value);
      assert.equal(
        res.status,
        400,
        `${JSON.stringify(value.toString('latin1'))}: ${JSON.stringify(res.body)}`,
      );
      assert.equal(res.body.error.type, 'invalid_request_error');
    }
    assert.equal(
      await ctx.svc.store.collections.runs.countDocuments({ account_id: acct.accountId }),
      0,
    );
    // 255 visible characters are fine.
    const longest = '!~'.repeat(127) + 'k';
    assert.equal((await start(ctx.svc.url, acct.key, longest, body)).status, 202);
  });

  it('frees the key of a refused start, so a later retry is judged afresh', async () => {
    const acct = await account(0);
    const body = { workflowId: 'greet', inputs: { name: 'x' } };
    expectError(await start(ctx.svc.url, acct.key, 'retry-me', body), {
      status: 402,
      type: 'insufficient_credits',
    });
    await addCredits(ctx.svc.store.collections, acct.accountId, 1, 'test: top-up');
    const ok = await start(ctx.svc.url, acct.key, 'retry-me', body);
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    // A refused request does not bind the key to its body either.
    expectError(await start(ctx.svc.url, acct.key, 'typo', { workflowId: 'gret' }), {
      status: 404,
      type: 'not_found_error',
    });
    assert.equal((await start(ctx.svc.url, acct.key, 'typo', body)).status, 202);
  });

  it('treats a key older than 24 hours as unused, even before it is removed', async () => {
    const acct = await account();
    const stale: IdempotencyKeyDoc = {
      _id: idempotencyId(acct.accountId, 'old'),
      account_id: acct.accountId,
      key: 'old',
      request_hash: requestHash({ other: 'body' }),
      run_id: generateId('run'),
      created_at: new Date(Date.now() - 25 * HOUR),
      expires_at: new Date(Date.now() - HOUR),
    };
    await ctx.svc.store.collections.idempotencyKeys.insertOne(stale);
    const res = await start(ctx.svc.url, acct.key, 'old', {
      workflowId: 'greet',
      inputs: { name: 'x' },
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.notEqual(res.body.run_id, stale.run_id);
    assert.equal(
      (await ctx.svc.store.collections.idempotencyKeys.findOne({ _id: stale._id }))?.run_id,
      res.body.run_id,
    );
  });

  describe('when the first request died half-way', () => {
    /** The key document a crashed first request left behind: claimed a while ago, for this body. */
    async function abandonedClaim(
      accountId: string,
      key: string,
      request: object,
      ageMs = 60_000,
    ): Promise<IdempotencyKeyDoc> {
      const claim: IdempotencyKeyDoc = {
        _id: idempotencyId(accountId, key),
        account_id: accountId,
        key,
        request_hash: requestHash(request),
        run_id: generateId('run'),
        created_at: new Date(Date.now() - ageMs),
        expires_at: new Date(Date.now() + 23 * HOUR),
      };
      await ctx.svc.store.collections.idempotencyKeys.insertOne(claim);
      return claim;
    }

    it('after claiming the key, before recording the run: a retry starts the run under the claimed id', async () => {
      const acct = await account();
      // The server hashes the parsed request, defaults included.
      const claim = await abandonedClaim(acct.accountId, 'crash-1', {
        workflowId: 'greet',
        stream: false,
        inputs: { name: 'Di' },
      });
      // Two retries at once, one per API process: both take over, the run record lets one through.
      const answers = await Promise.all(
        [ctx.svc.url, other.url].map((url) =>
          start(url, acct.key, 'crash-1', { workflowId: 'greet', inputs: { name: 'Di' } }),
        ),
      );
      for (const res of answers) {
        assert.equal(res.status, 202, JSON.stringify(res.body));
        assert.equal(res.body.run_id, claim.run_id);
      }
      assert.equal(
        firstText(await waitForRun(ctx.svc.url, acct.key, claim.run_id), 'greeting'),
        'Hello, Di!',
      );
      assert.equal(
        await ctx.svc.store.collections.runs.countDocuments({ account_id: acct.accountId }),
        1,
      );
    });

    /** The run such a request recorded `ageMs` ago, its workflow never started, and its key's claim. */
    async function recordedRun(key: string, name: string, ageMs: number, claimAgeMs = ageMs) {
      const acct = await account();
      const body = { workflowId: 'greet', inputs: { name } };
      const claim = await abandonedClaim(
        acct.accountId,
        key,
        { ...body, stream: false },
        claimAgeMs,
      );
      const run = pendingRun({
        _id: claim.run_id,
        account_id: acct.accountId,
        key_id: acct.keyId,
        published_workflow_id: acct.published.workflow_id,
        published_workflow_version_id: acct.published.version_id,
        version: acct.published.version,
        inputs: body.inputs,
        created_at: new Date(Date.now() - ageMs),
      });
      await insertRun(ctx.svc.store.collections, run);
      return { acct, run, body };
    }

    it('after recording the run, before starting its workflow: a retry starts the workflow, once', async () => {
      const { acct, run, body } = await recordedRun('crash-2', 'Ed', 59_000);
      const answers = await Promise.all([
        start(ctx.svc.url, acct.key, 'crash-2', body),
        start(other.url, acct.key, 'crash-2', body),
      ]);
      for (const res of answers) {
        assert.equal(res.status, 202, JSON.stringify(res.body));
        assert.equal(res.body.run_id, run._id);
        assert.equal(res.body.created_at, run.created_at.toISOString());
      }
      assert.equal(
        firstText(await waitForRun(ctx.svc.url, acct.key, run._id), 'greeting'),
        'Hello, Ed!',
      );
      const debits = await waitFor(async () =>
        (await runDebits(acct.accountId)).length > 0 ? runDebits(acct.accountId) : undefined,
      );
      assert.deepEqual(
        debits.map((e) => e.run_id),
        [run._id],
      );
      assert.deepEqual(await workflowsOf(acct.accountId), [run._id]);
    });

    const hasWorkflow = (runId: string) =>
      temporalClient(ctx.svc)
        .workflow.getHandle(runId)
        .describe()
        .then(
          () => true,
          (err: Error) => (err.name === 'WorkflowNotFoundError' ? false : Promise.reject(err)),
        );

    it('after recording the run, a retry sent at once waits until the claim is stale and answers with the run started', async () => {
      // The first request died a moment ago: its claim is fresh. Before, the retry answered 202
      // at once with a run whose workflow never started (`pending` until a read failed it 15 min on).
      const { acct, run, body } = await recordedRun('crash-2-early', 'Hal', 100, 100);
      const res = await start(ctx.svc.url, acct.key, 'crash-2-early', body);
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.equal(res.body.run_id, run._id);
      assert.equal(await hasWorkflow(run._id), true, 'answered with a run that never started');
      assert.equal(
        firstText(await waitForRun(ctx.svc.url, acct.key, run._id), 'greeting'),
        'Hello, Hal!',
      );
    });

    describe('and its retry comes late', () => {
      it('past the time a start could take: the retry ends it `failed`, billed nothing, and starts nothing', async () => {
        const late = NEVER_STARTED_AFTER_MS + 60_000;
        const { acct, run, body } = await recordedRun('late', 'Flo', late);
        const res = await start(ctx.svc.url, acct.key, 'late', body);
        assert.equal(res.status, 202, JSON.stringify(res.body));
        assert.equal(res.body.run_id, run._id);
        const c = ctx.svc.store.collections;
        const record = await c.runs.findOne({ _id: run._id });
        assert.equal(record?.status, 'failed');
        assert.equal(record?.error, NEVER_STARTED_ERROR);
        assert.equal(record?.total_cost, 0);
        assert.equal(await hasWorkflow(run._id), false);
        const entries = await c.ledger.find({ run_id: run._id }).toArray();
        assert.equal(
          entries.reduce((sum, e) => sum + e.amount_usd, 0),
          0,
        );
      });

      it('while a read could be ending it: the retry leaves it to the read, and starts nothing', async () => {
        const almost = (RESUMABLE_FOR_MS + NEVER_STARTED_AFTER_MS) / 2;
        const { acct, run, body } = await recordedRun('almost', 'Gus', almost);
        const res = await start(ctx.svc.url, acct.key, 'almost', body);
        assert.equal(res.status, 202, JSON.stringify(res.body));
        assert.equal(res.body.run_id, run._id);
        const record = await ctx.svc.store.collections.runs.findOne({ _id: run._id });
        assert.equal(record?.status, 'pending');
        assert.equal(await hasWorkflow(run._id), false);
      });
    });
  });
});
