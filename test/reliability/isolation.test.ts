/**
 * Two accounts. Every endpoint that takes a run, file or workflow id answers
 * 404 (or an input error) for the other account's ids, exactly as for an unknown id, so ids
 * reveal nothing. Another account's file id as a start input (400 invalid_input_fields) and a
 * link whose signature was made for another file (403) are in test/api/routes/files.test.ts; here the
 * cross-account variants.
 */
import assert from 'node:assert/strict';
import { expectError } from '../support/api-assert';
import { greetingWorkflow, publish } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { openSse } from '../support/sse';
import { useService } from '../support/use-service';

const png = (bytes: number[]) =>
  new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...bytes]);

describe('reliability: isolation between accounts', function () {
  this.timeout(120_000);
  // No worker: runs stay `pending`, which is all that isolation needs (and cancel has something to cancel).
  const ctx = useService({ account: false, worker: false });
  let a: { key: string; accountId: string };
  let b: { key: string; accountId: string };
  let aWorkflow: any;
  let aRunId: string;
  let aFile: any;
  let bFile: any;

  async function upload(key: string, bytes: Uint8Array): Promise<any> {
    const res = await fetch(`${ctx.svc.url}/api/v1/files?name=x.png`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'image/png' },
      body: bytes,
    });
    assert.equal(res.status, 201);
    return res.json();
  }

  before(async () => {
    a = await ctx.newAccount();
    b = await ctx.newAccount();
    aWorkflow = await publish(ctx.svc.url, a.key, greetingWorkflow('private-greet'));
    const started = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: a.key,
      body: { workflowId: 'private-greet', inputs: { name: 'A' } },
      headers: { 'idempotency-key': 'shared-key' },
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    aRunId = started.body.run_id;
    aFile = await upload(a.key, png([1, 2, 3]));
    bFile = await upload(b.key, png([4, 5, 6]));
  });

  it("another account's run: GET, stream (with and without a cursor) and cancel are 404 like an unknown run", async () => {
    for (const res of [
      await call(ctx.svc.url, 'GET', `/api/v1/runs/${aRunId}`, { key: b.key }),
      await call(ctx.svc.url, 'POST', `/api/v1/runs/${aRunId}/cancel`, { key: b.key }),
    ]) {
      expectError(res, { status: 404, type: 'not_found_error', code: 'not_found' });
    }
    for (const headers of [{}, { 'last-event-id': '0' }] as Array<Record<string, string>>) {
      const stream = await openSse(`${ctx.svc.url}/api/v1/runs/${aRunId}/stream`, {
        key: b.key,
        headers,
      });
      assert.equal(stream.status, 404);
      assert.equal(stream.frames.length, 0);
      assert.equal(stream.json.error.code, 'not_found');
    }
    // The same answers as for an id that does not exist (nothing tells the two apart but the id).
    const unknown = `run_${'0'.repeat(26)}`;
    const mine = await call(ctx.svc.url, 'GET', `/api/v1/runs/${unknown}`, { key: b.key });
    const theirs = await call(ctx.svc.url, 'GET', `/api/v1/runs/${aRunId}`, { key: b.key });
    assert.equal(
      theirs.body.error.message.replace(aRunId, 'ID'),
      mine.body.error.message.replace(unknown, 'ID'),
    );
    // B's cancel did nothing: A's run is untouched and A still sees it.
    const own = await call(ctx.svc.url, 'GET', `/api/v1/runs/${aRunId}`, { key: a.key });
    assert.equal(own.status, 200);
    assert.equal(own.body.status, 'pending');
    assert.equal(ctx.svc.api.pollers.size, 0, 'a refused stream leaves no poller');
  });

  it("lists: B sees none of A's runs, by A's workflow id, slug or cursor", async () => {
    for (const query of [
      '',
      `?workflowId=${aWorkflow.workflow_id}`,
      '?workflowId=private-greet',
      `?starting_after=run_${'Z'.repeat(26)}`,
      '?status=pending',
    ]) {
      const res = await call(ctx.svc.url, 'GET', `/api/v1/runs${query}`, { key: b.key });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.data, [], `B lists A's runs with ${query || 'no filter'}`);
    }
    const own = await call(ctx.svc.url, 'GET', `/api/v1/runs?workflowId=${aWorkflow.workflow_id}`, {
      key: a.key,
    });
    assert.deepEqual(
      own.body.data.map((r: any) => r.id ?? r.run_id),
      [aRunId],
    );
  });

  it("another account's private workflow: contract and start are 404 by id, slug and version id; a public one is shared", async () => {
    for (const ref of [aWorkflow.workflow_id, 'private-greet']) {
      expectError(await call(ctx.svc.url, 'GET', `/api/v1/workflows/${ref}`, { key: b.key }), {
        status: 404,
        type: 'not_found_error',
        code: 'published_workflow_not_found',
      });
      expectError(
        await call(ctx.svc.url, 'POST', '/api/v1/responses', {
          key: b.key,
          body: { workflowId: ref, inputs: { name: 'B' } },
        }),
        {
          status: 404,
          type: 'not_found_error',
          code: 'published_workflow_not_found',
        },
      );
    }
    // A's version id pinned on B's own workflow is no version of it.
    await publish(ctx.svc.url, b.key, greetingWorkflow('b-greet'));
    expectError(
      await call(ctx.svc.url, 'GET', `/api/v1/workflows/b-greet?version=${aWorkflow.version_id}`, {
        key: b.key,
      }),
      {
        status: 404,
        type: 'not_found_error',
        code: 'published_workflow_version_not_found',
      },
    );
    expectError(
      await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: b.key,
        body: { workflowId: 'b-greet', version: aWorkflow.version_id, inputs: { name: 'B' } },
      }),
      {
        status: 404,
        type: 'not_found_error',
        code: 'published_workflow_version_not_found',
      },
    );
    // D2: a public workflow runs for anyone by id (not by A's slug), and the run is B's, not A's.
    const shared = await publish(
      ctx.svc.url,
      a.key,
      greetingWorkflow('shared-greet', 'Hi', { public: true }),
    );
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/workflows/${shared.workflow_id}`, { key: b.key }))
        .status,
      200,
    );
    expectError(await call(ctx.svc.url, 'GET', '/api/v1/workflows/shared-greet', { key: b.key }), {
      status: 404,
      type: 'not_found_error',
    });
    const bRun = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: b.key,
      body: { workflowId: shared.workflow_id, inputs: { name: 'B' } },
    });
    assert.equal(bRun.status, 202, JSON.stringify(bRun.body));
    expectError(
      await call(ctx.svc.url, 'GET', `/api/v1/runs/${bRun.body.run_id}`, { key: a.key }),
      { status: 404, type: 'not_found_error' },
    );
  });

  it('a version published private stays private when a later one is public (D2)', async () => {
    const v1 = await publish(ctx.svc.url, a.key, greetingWorkflow('opened-later'));
    await publish(ctx.svc.url, a.key, greetingWorkflow('opened-later', 'Hi', { public: true }));
    // B sees the public version 2 as the latest (the catalog caches a workflow for a moment).
    await waitFor(async () => {
      const latest = await call(ctx.svc.url, 'GET', `/api/v1/workflows/${v1.workflow_id}`, {
        key: b.key,
      });
      return latest.status === 200 && latest.body.version === 2 ? true : undefined;
    });
    for (const pin of [1, v1.version_id]) {
      const notFound = {
        status: 404,
        type: 'not_found_error',
        code: 'published_workflow_version_not_found',
      };
      const path = `/api/v1/workflows/${v1.workflow_id}?version=${pin}`;
      expectError(await call(ctx.svc.url, 'GET', path, { key: b.key }), notFound);
      expectError(
        await call(ctx.svc.url, 'POST', '/api/v1/responses', {
          key: b.key,
          body: { workflowId: v1.workflow_id, version: pin, inputs: { name: 'B' } },
        }),
        notFound,
      );
      assert.equal((await call(ctx.svc.url, 'GET', path, { key: a.key })).status, 200);
    }
  });

  it("Idempotency-Key values are per account: B's request with A's key starts B's own run", async () => {
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: b.key,
      body: { workflowId: 'b-greet', inputs: { name: 'A' } },
      headers: { 'idempotency-key': 'shared-key' },
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.notEqual(res.body.run_id, aRunId);
    // Even with A's exact body, B never gets A's run (A's workflow is not B's to start).
    const same = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: b.key,
      body: { workflowId: 'private-greet', inputs: { name: 'A' } },
      headers: { 'idempotency-key': 'shared-key' },
    });
    assert.notEqual(same.body?.run_id, aRunId, JSON.stringify(same.body));
    assert.ok(
      same.status >= 400 && same.status < 500,
      `${same.status} ${JSON.stringify(same.body)}`,
    );
  });

  it("another account's file: GET is 404; A's signed link works without a key; a signature of B's file does not open A's", async () => {
    expectError(await call(ctx.svc.url, 'GET', `/api/v1/files/${aFile.id}`, { key: b.key }), {
      status: 404,
      type: 'not_found_error',
    });
    assert.equal(
      (await call(ctx.svc.url, 'GET', `/api/v1/files/${aFile.id}`, { key: a.key })).status,
      200,
    );
    // D19: a link is a bearer capability, valid for whoever holds it.
    assert.equal((await fetch(aFile.url)).status, 200);
    // B's own valid link, pointed at A's file id (and the reverse): the signature covers the id.
    for (const [link, target] of [
      [bFile.url, aFile.id],
      [aFile.url, bFile.id],
    ]) {
      const forged = new URL(link);
      forged.pathname = `/files/${target}/content`;
      expectError(await call(forged.origin, 'GET', forged.pathname + forged.search), {
        status: 403,
        type: 'invalid_request_error',
        code: 'invalid_signature',
      });
    }
  });
});
