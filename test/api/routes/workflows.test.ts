/** API surface: publishing workflows (D26, D3) through POST /api/v1/workflows on the real stack. */
import assert from 'node:assert/strict';
import net from 'node:net';
import { PUBLISH_MAX_IN_PROGRESS } from '../../../api/workflows/publish-queue';
import { setAccountCap } from '../../../store/accounts';
import { detailFor, expectError } from '../../support/api-assert';
import { greetingWorkflow, publish, typedInputsWorkflow } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { useService } from '../../support/use-service';

const ULID = '[0-7][0-9A-HJKMNP-TV-Z]{25}';
const WF_ID = new RegExp(`^wf_${ULID}$`);
const WFV_ID = new RegExp(`^wfv_${ULID}$`);

describe('API workflows: publishing (D26)', function () {
  this.timeout(120_000);
  const ctx = useService({ worker: false });

  it('publishes a valid graph: 201 with ids, version 1, slug and the contract', async () => {
    const res = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
      key: ctx.key,
      body: typedInputsWorkflow('typed'),
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body).sort(), [
      'inputs',
      'outputs',
      'slug',
      'version',
      'version_id',
      'workflow_id',
    ]);
    assert.match(res.body.workflow_id, WF_ID);
    assert.match(res.body.version_id, WFV_ID);
    assert.equal(res.body.version, 1);
    assert.equal(res.body.slug, 'typed');
    // D3 keys, in node order, with types, required flags and the default.
    assert.deepEqual(
      res.body.inputs.map((i: any) => [i.key, i.label, i.type, i.required]),
      [
        ['product_name', 'Product Name', 'text', true],
        ['count', 'Count', 'number', true],
        ['gift_wrap', 'Gift Wrap?', 'boolean', true],
        ['tone', 'Tone', 'text', false],
      ],
    );
    assert.equal(res.body.inputs[3].default, 'friendly');
    assert.deepEqual(
      res.body.outputs.map((o: any) => [o.key, o.label]),
      [['line', 'Line']],
    );
  });

  it('publishing the same slug again adds version 2 of the same workflow', async () => {
    const v1 = await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet-versions', 'Hello'));
    const v2 = await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet-versions', 'Howdy'));
    assert.equal(v1.version, 1);
    assert.equal(v2.version, 2);
    assert.equal(v2.workflow_id, v1.workflow_id);
    assert.match(v2.version_id, WFV_ID);
    assert.notEqual(v2.version_id, v1.version_id);
    assert.equal(v2.slug, 'greet-versions');
    const v3 = await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet-versions', 'Hi'));
    assert.equal(v3.version, 3);
    assert.equal(v3.workflow_id, v1.workflow_id);

    // Published versions are immutable: version 1 is stored as it was published.
    const stored = await ctx.svc.store.collections.workflowVersions.findOne({ _id: v1.version_id });
    assert.equal((stored!.graph.nodes[1] as { template: string }).template, 'Hello, {{name}}!');
    assert.equal(
      await ctx.svc.store.collections.workflowVersions.countDocuments({
        workflow_id: v1.workflow_id,
      }),
      3,
    );
  });

  it('concurrent publishes of a new slug make one workflow with versions 1..n', async () => {
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call(ctx.svc.url, 'POST', '/api/v1/workflows', {
          key: ctx.key,
          body: greetingWorkflow('racy', `Hi ${i}`),
        }),
      ),
    );
    for (const r of results) assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(new Set(results.map((r) => r.body.workflow_id)).size, 1);
    assert.deepEqual(results.map((r) => r.body.version).sort(), [1, 2, 3, 4, 5, 6]);
    assert.equal(new Set(results.map((r) => r.body.version_id)).size, 6);
  });

  it('has at most PUBLISH_MAX_IN_PROGRESS publishes of an account in progress: one more is 429 too_many_publishes before its body is read (before: queued without bound, 250 bodies of 1 MiB ran the API out of heap)', async () => {
    const { key } = await ctx.newAccount();
    const { host, hostname, port } = new URL(ctx.svc.url);
    // One more publish than the places, none sending its body: each holds a place until its
    // connection closes, and the last to arrive is answered at once, before its body.
    const held = Array.from({ length: PUBLISH_MAX_IN_PROGRESS + 1 }, () => {
      const socket = net.connect(Number(port), hostname);
      socket.on('error', () => {});
      let raw = '';
      const answered = new Promise<string>((resolve) =>
        socket.on('data', (chunk) => {
          raw += chunk;
          if (raw.includes('}}')) resolve(raw);
        }),
      );
      socket.write(
        `POST /api/v1/workflows HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"slug":`,
      );
      return { socket, answered, raw: () => raw };
    });
    try {
      const answer = await Promise.race(held.map((h) => h.answered));
      const [head, body] = answer.split('\r\n\r\n');
      assert.match(head, /^HTTP\/1\.1 429 /);
      assert.match(head, /\r\nRetry-After: 1\r\n/i);
      const { error } = JSON.parse(body);
      assert.equal(error.type, 'rate_limit_error');
      assert.equal(error.code, 'too_many_publishes');
      // Another account has places of its own; the rest of the held ones are still waiting.
      await publish(ctx.svc.url, (await ctx.newAccount()).key, greetingWorkflow('queued'));
      assert.equal(held.filter((h) => h.raw() !== '').length, 1);
    } finally {
      for (const { socket } of held) socket.destroy();
    }
    // A closed publish gives its place back.
    await waitFor(
      async () =>
        (
          await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
            key,
            body: greetingWorkflow('queued'),
          })
        ).status === 201 || undefined,
      { what: 'a publish after the held ones closed' },
    );
  });

  it('scopes slugs to the account: another account publishing the same slug gets its own workflow', async () => {
    const other = await ctx.newAccount();
    const mine = await publish(ctx.svc.url, ctx.key, greetingWorkflow('shared-slug'));
    const theirs = await publish(ctx.svc.url, other.key, greetingWorkflow('shared-slug'));
    assert.notEqual(theirs.workflow_id, mine.workflow_id);
    assert.equal(theirs.version, 1);
  });

  it('rejects a graph with several problems at once: 400 with one details entry per problem', async () => {
    const before = await ctx.svc.store.collections.workflows.countDocuments({});
    const doc = {
      slug: 'broken',
      nodes: [
        { id: 'name', type: 'user_input', label: 'Name', input_type: 'text' }, // 0
        { id: 'name2', type: 'user_input', label: '  NAME! ', input_type: 'text' }, // 1: normalizes to `name` too
        { id: 'mystery', type: 'teleport', destination: 'mars' }, // 2: unknown type
        { id: 'a', type: 'text', template: '{{x}} and {{n}}' }, // 3
        { id: 'b', type: 'text', template: 'again {{y}}' }, // 4
        { id: 'lonely', type: 'text', template: 'I need {{missing}}' }, // 5: placeholder without an edge
        { id: 'res', type: 'user_result', label: 'Result' }, // 6
        { id: 'orphan', type: 'user_result', label: 'Orphan' }, // 7: no incoming edge
      ],
      edges: [
        { from: 'name', to: 'a', port: 'n' }, // 0
        { from: 'b', to: 'a', port: 'x' }, // 1
        { from: 'a', to: 'b', port: 'y' }, // 2: closes a ⇄ b
        { from: 'a', to: 'res' }, // 3
        { from: 'name', to: 'ghost', port: 'in' }, // 4: to a missing node
      ],
    };
    const res = await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key: ctx.key, body: doc });
    const error = expectError(res, { status: 400, type: 'invalid_request_error' });

    assert.match(detailFor(error, 'nodes[2].type'), /`teleport` is not a known type/);
    assert.match(detailFor(error, 'edges[4].to'), /`ghost`.*not a node id/);
    const cycle = error.details.filter((d: any) => /cycle/.test(d.problem));
    assert.equal(cycle.length, 1, JSON.stringify(error.details));
    assert.match(cycle[0].field, /^edges\[[12]\]$/);
    assert.match(cycle[0].problem, /`a`/);
    assert.match(cycle[0].problem, /`b`/);
    assert.match(detailFor(error, 'nodes[1].label'), /`name2`.*`name`.*both normalize to `name`/);
    assert.match(detailFor(error, 'nodes[7]'), /"Orphan" with 0 incoming edges/);
    assert.match(
      detailFor(error, 'nodes[5].template'),
      /\{\{missing\}\}.*no edge feeds port `missing`/,
    );
    assert.equal(
      error.details.length,
      6,
      `one entry per problem, nothing else: ${JSON.stringify(error.details, null, 1)}`,
    );

    // param is the first problem's field, and the message names every one.
    assert.equal(error.param, error.details[0].field);
    for (const d of error.details)
      assert.ok(
        error.message.includes(`\`${d.field}\``),
        `message lacks ${d.field}: ${error.message}`,
      );
    assert.match(error.message, /^Invalid workflow: /);

    // Nothing was stored.
    assert.equal(await ctx.svc.store.collections.workflows.countDocuments({}), before);
  });

  it('rejects shape errors with their paths and a label that normalizes to nothing', async () => {
    const doc = {
      slug: 'Not A Slug',
      colour: 'blue',
      nodes: [
        { id: 'in', type: 'user_input', label: '!!!', input_type: 'colour' },
        { id: 'out', type: 'user_result', label: '???' },
        { id: 'llm', type: 'llm', prompt: 'hi', temprature: 2 },
      ],
      edges: [{ from: 'in', to: 'out' }],
    };
    const error = expectError(
      await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key: ctx.key, body: doc }),
      {
        status: 400,
        type: 'invalid_request_error',
      },
    );
    assert.match(detailFor(error, 'slug'), /lower-case/);
    assert.match(detailFor(error, 'colour'), /not a field/);
    assert.match(detailFor(error, 'nodes[0].input_type'), /`text`/);
    assert.match(detailFor(error, 'nodes[1].label'), /normalizes to an empty key/);
    assert.match(detailFor(error, 'nodes[2].model'), /required/);
    assert.match(detailFor(error, 'nodes[2].temprature'), /not a field/);
  });

  it('rejects bodies that are not a workflow document', async () => {
    for (const body of [[], 'null', '"text"', '42', {}]) {
      const res = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
        key: ctx.key,
        body: typeof body === 'string' ? body : JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      const error = expectError(res, { status: 400, type: 'invalid_request_error' });
      assert.ok(Array.isArray(error.details) && error.details.length > 0, JSON.stringify(error));
    }
  });

  it('rejects two User Results that normalize alike, naming both nodes', async () => {
    const doc = greetingWorkflow('dup-results');
    doc.nodes.push({ id: 'greeting2', type: 'user_result', label: 'greeting' } as any);
    doc.edges.push({ from: 'greet', to: 'greeting2' } as any);
    const error = expectError(
      await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key: ctx.key, body: doc }),
      {
        status: 400,
        type: 'invalid_request_error',
        param: 'nodes[3].label',
      },
    );
    assert.match(
      detailFor(error, 'nodes[3].label'),
      /`greeting2`.*`greeting`.*both normalize to `greeting`/,
    );
    assert.equal(error.details.length, 1);
  });
});

describe('API workflows: what an account’s published versions may hold (D26)', function () {
  this.timeout(60_000);
  // A greeting version holds ~550 bytes (graph and contract as JSON): about eleven fit.
  const QUOTA = 6_000;
  const ctx = useService({ worker: false, env: { WORKFLOW_STORAGE_MAX_BYTES: String(QUOTA) } });

  const publishAs = (key: string, slug: string) =>
    call(ctx.svc.url, 'POST', '/api/v1/workflows', { key, body: greetingWorkflow(slug) });

  /** Publishes versions of `slug` until one is refused (at most 50); returns how many fit and the refusal. */
  async function publishUntilRefused(key: string, slug: string) {
    for (let fitted = 0; fitted < 50; fitted++) {
      const res = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
        key,
        body: greetingWorkflow(slug, `Hello ${fitted}`),
      });
      if (res.status !== 201) return { fitted, refused: res };
    }
    assert.fail('50 versions fitted in the quota');
  }

  it('refuses a version that does not fit with 413 storage_quota_exceeded and stores nothing, until a workflow is deleted', async () => {
    const { key } = await ctx.newAccount();
    const { fitted, refused } = await publishUntilRefused(key, 'quota-full');
    assert.ok(fitted >= 5 && fitted <= 15, `${fitted} versions fitted in ${QUOTA} bytes`);
    expectError(refused, {
      status: 413,
      type: 'invalid_request_error',
      code: 'storage_quota_exceeded',
      message: [`of the ${QUOTA} bytes`, 'published workflow versions'],
    });
    // Nothing of the refused version was stored: the latest is still the last that fitted.
    const latest = await call(ctx.svc.url, 'GET', '/api/v1/workflows/quota-full', { key });
    assert.equal(latest.status, 200);
    assert.equal(latest.body.version, fitted);
    // A new workflow of the same account is refused as well; another account publishes.
    const other = await call(ctx.svc.url, 'POST', '/api/v1/workflows', {
      key,
      body: greetingWorkflow('quota-other'),
    });
    expectError(other, {
      status: 413,
      type: 'invalid_request_error',
      code: 'storage_quota_exceeded',
    });
    await publish(ctx.svc.url, (await ctx.newAccount()).key, greetingWorkflow('quota-full'));
    // Deleting the workflow gives its versions' room back at once.
    const deleted = await call(ctx.svc.url, 'DELETE', '/api/v1/workflows/quota-full', { key });
    assert.equal(deleted.status, 200);
    await publish(ctx.svc.url, key, greetingWorkflow('quota-other'));
  });

  it('holds concurrent publishes of one process to the quota', async () => {
    // Workflows of slugs of one length hold the same bytes: at most as many fit at once as one by
    // one (a write counted twice while the sum is read anew may refuse one that would fit).
    const slug = (tag: string, i: number) => `quota-${tag}-${String(i).padStart(2, '0')}`;
    const sequential = (await ctx.newAccount()).key;
    let fit = 0;
    while ((await publishAs(sequential, slug('s', fit))).status === 201) fit++;
    const concurrent = (await ctx.newAccount()).key;
    // In waves of as many as an account may have in progress at once.
    const answers = [];
    for (let i = 0; i < 2 * fit + 4; i += PUBLISH_MAX_IN_PROGRESS)
      answers.push(
        ...(await Promise.all(
          Array.from({ length: PUBLISH_MAX_IN_PROGRESS }, (_, j) =>
            publishAs(concurrent, slug('c', i + j)),
          ),
        )),
      );
    const stored = answers.filter((a) => a.status === 201).length;
    assert.ok(stored <= fit && stored >= fit / 2, `${stored} stored at once where ${fit} fit`);
    for (const refused of answers.filter((a) => a.status !== 201))
      expectError(refused, {
        status: 413,
        type: 'invalid_request_error',
        code: 'storage_quota_exceeded',
      });
  });

  it('an account’s own quota (`wrs accounts workflow-storage`) wins over WORKFLOW_STORAGE_MAX_BYTES', async () => {
    const { accountId, key } = await ctx.newAccount();
    await setAccountCap(
      ctx.svc.store.collections,
      accountId,
      'max_workflow_storage_bytes',
      3 * QUOTA,
    );
    const { fitted, refused } = await publishUntilRefused(key, 'quota-own');
    assert.ok(fitted >= 25, `${fitted} versions fitted in ${3 * QUOTA} bytes`);
    expectError(refused, {
      status: 413,
      type: 'invalid_request_error',
      code: 'storage_quota_exceeded',
    });
  });
});
