/**
 * D17 holds end to end: concurrent starts reserve credit atomically, across API processes, so an
 * account cannot go below zero by more than one run's hold; every hold is given back exactly
 * once when its run ends, whether it completed, failed or was cancelled.
 */
import assert from 'node:assert/strict';
import { startApi, type ApiHandle } from '../../../api/start-api';
import { createLogger } from '../../../api/logger';
import { runCli } from '../../../cli/run-cli';
import { accountCredit } from '../../../store/credit-holds';
import { expectError } from '../../support/api-assert';
import { publish, waitForRun } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { startRun } from '../../support/runs';
import { useService } from '../../support/use-service';

const START_FEE_USD = 0.001;
const PER_IMAGE_USD = 0.002;
/** An image run's hold: its worst case, exact (domain/run-hold.ts): the fee and one image. */
const IMAGE_HOLD_USD = START_FEE_USD + PER_IMAGE_USD;
const PRICES = JSON.stringify({
  'img-test': { per_image: PER_IMAGE_USD },
  'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 },
});

/** One priced image per run; with `failAfter`, a `select` past the end then fails the run (after the image was billed). */
function imageWorkflow(slug: string, failAfter = false) {
  return {
    slug,
    nodes: [
      { id: 'subject', type: 'user_input', label: 'Subject', input_type: 'text' },
      { id: 'draw', type: 'image_generation', model: 'img-test', prompt: 'A {{subject}}', n: 1 },
      ...(failAfter ? [{ id: 'pick', type: 'select', index: 5 }] : []),
      { id: 'out', type: 'user_result', label: 'Image' },
    ],
    edges: [
      { from: 'subject', to: 'draw', port: 'subject' },
      ...(failAfter
        ? [
            { from: 'draw', to: 'pick' },
            { from: 'pick', to: 'out' },
          ]
        : [{ from: 'draw', to: 'out' }]),
    ],
  };
}

const round = (usd: number) => Math.round(usd * 1e9) / 1e9;

describe('billing holds (D17): concurrent starts cannot overspend, every hold is released once', function () {
  this.timeout(180_000);
  const ctx = useService({ fakeOpenAI: true, env: { PRICES }, account: false });
  let other: ApiHandle;

  before(async () => {
    // A second API process on the same store and Temporal: the race spans processes.
    other = await startApi(ctx.svc.config, createLogger('silent'));
  });
  after(async () => other?.close());

  /** What `wrs credits ACCOUNT_ID` prints. */
  async function credits(accountId: string): Promise<string> {
    const out: string[] = [];
    const code = await runCli(['credits', accountId], {
      collections: ctx.svc.store.collections,
      out: (line) => out.push(line),
      err: (line) => out.push(line),
    });
    assert.equal(code, 0, out.join('\n'));
    return out.join('\n');
  }

  /** Held and available once every run ended and every process gave its lease back. */
  const settled = (accountId: string) =>
    waitFor(
      async () => {
        const credit = await accountCredit(ctx.svc.store.collections, accountId);
        return credit.held_usd === 0 ? credit : undefined;
      },
      { timeoutMs: 30_000, what: 'every hold to be released' },
    );

  it('40 parallel starts on $0.005 admit what it covers, across two API processes; the balance ends above minus one hold; the next start is 402', async () => {
    const { svc } = ctx;
    const c = svc.store.collections;
    const { accountId, key } = await ctx.newAccount(0.005);
    await publish(svc.url, key, imageWorkflow('hold-race'));

    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(i % 2 ? other.url : svc.url, 'POST', '/api/v1/responses', {
          key,
          body: { workflowId: 'hold-race', inputs: { subject: `cat ${i}` } },
        }),
      ),
    );
    const startsMs = Date.now() - started;
    const admitted = answers.filter((r) => r.status === 202);
    for (const refused of answers.filter((r) => r.status !== 202))
      expectError(refused, {
        status: 402,
        type: 'insufficient_credits',
        code: 'insufficient_credits',
      });
    // Admitted while something is available: $0.005 -> $0.002 -> -$0.001, then nothing.
    assert.equal(admitted.length, 2, `admitted ${admitted.length} of 40`);
    assert.equal(await c.runs.countDocuments({ account_id: accountId }), admitted.length);

    for (const res of admitted) {
      const run = await waitForRun(svc.url, key, res.body.run_id, 60_000);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.equal(run.total_cost, IMAGE_HOLD_USD);
    }
    const credit = await settled(accountId);
    const balance = credit.balance_usd;
    assert.equal(balance, round(0.005 - admitted.length * IMAGE_HOLD_USD));
    assert.ok(balance >= -IMAGE_HOLD_USD, `balance ${balance} below minus one hold`);
    // One debit per run, each giving back the run's whole hold.
    const debits = await c.ledger.find({ account_id: accountId, kind: 'run' }).toArray();
    assert.deepEqual(
      debits.map((d) => [d.amount_usd, d.released_usd]).sort(),
      admitted.map(() => [-IMAGE_HOLD_USD, IMAGE_HOLD_USD]),
    );
    console.log(
      `      40 parallel starts on $0.005 (hold $${IMAGE_HOLD_USD}): ${admitted.length} admitted, ` +
        `${40 - admitted.length} refused in ${startsMs} ms; final balance $${balance}`,
    );

    for (const url of [svc.url, other.url]) {
      const late = await call(url, 'POST', '/api/v1/responses', {
        key,
        body: { workflowId: 'hold-race', inputs: { subject: 'late' } },
      });
      expectError(late, {
        status: 402,
        type: 'insufficient_credits',
        code: 'insufficient_credits',
      });
    }
  });

  it('releases the hold of a run that fails and of a run that is cancelled, once each', async () => {
    const { svc } = ctx;
    const c = svc.store.collections;
    const { accountId, key } = await ctx.newAccount(10);
    await publish(svc.url, key, imageWorkflow('hold-fails', true));
    await publish(svc.url, key, {
      slug: 'hold-slow',
      nodes: [
        { id: 'topic', type: 'user_input', label: 'Topic', input_type: 'text' },
        { id: 'ask', type: 'llm', model: 'gpt-test', prompt: '{{topic}}' },
        { id: 'out', type: 'user_result', label: 'Answer' },
      ],
      edges: [
        { from: 'topic', to: 'ask', port: 'topic' },
        { from: 'ask', to: 'out' },
      ],
    });

    const failedId = await startRun(svc.url, key, 'hold-fails', { subject: 'dog' });
    const slowId = await startRun(svc.url, key, 'hold-slow', { topic: 'slow:30000 hold-cancel' });
    const records = await c.runs.find({ _id: { $in: [failedId, slowId] } }).toArray();
    const holdOf = new Map(records.map((r) => [r._id, r.hold_usd]));
    assert.equal(holdOf.get(failedId), IMAGE_HOLD_USD);
    assert.equal(holdOf.get(slowId), START_FEE_USD + svc.config.credits.holdPerCallUsd); // an estimate per call
    const held = await accountCredit(c, accountId);
    assert.ok(held.held_usd >= IMAGE_HOLD_USD + holdOf.get(slowId)!, JSON.stringify(held));
    // The operator sees it: `wrs credits ACCOUNT_ID`.
    const shown = await credits(accountId);
    assert.match(shown, /^Balance: \$10\.00$/m);
    assert.match(shown, /^Held by runs in progress: \$0\.\d+$/m);
    assert.match(shown, /^Available to start runs: \$9\.\d+$/m);

    await waitFor(
      async () => (ctx.fake.requestsWith('hold-cancel').length === 1 ? true : undefined),
      {
        what: 'the slow call to reach the provider',
      },
    );
    const cancel = await call(svc.url, 'POST', `/api/v1/runs/${slowId}/cancel`, { key });
    assert.equal(cancel.status, 202, JSON.stringify(cancel.body));
    const failed = await waitForRun(svc.url, key, failedId, 60_000);
    const cancelled = await waitForRun(svc.url, key, slowId, 60_000);
    assert.equal(failed.status, 'failed', JSON.stringify(failed));
    assert.equal(cancelled.status, 'cancelled', JSON.stringify(cancelled));

    const credit = await settled(accountId);
    const spent = round(failed.total_cost + cancelled.total_cost);
    assert.deepEqual(credit, {
      balance_usd: round(10 - spent),
      held_usd: 0,
      available_usd: round(10 - spent),
    });
    assert.doesNotMatch(await credits(accountId), /Held/);
    const entries = await c.ledger.find({ run_id: { $in: [failedId, slowId] } }).toArray();
    assert.deepEqual(
      entries.map((e) => [e.run_id, e.released_usd]).sort(),
      [
        [failedId, IMAGE_HOLD_USD],
        [slowId, holdOf.get(slowId)],
      ].sort(),
    );
  });

  it('gives the hold back when the run cannot be started (its Temporal connection closed): no record, nothing held', async () => {
    const { svc } = ctx;
    const c = svc.store.collections;
    const { accountId, key } = await ctx.newAccount(0.005);
    await publish(svc.url, key, imageWorkflow('hold-no-temporal'));
    // An API process whose Temporal connection is gone: its starts reserve, record, then fail.
    const cut = await startApi(svc.config, createLogger('silent'));
    try {
      await cut.connection.close();
      const res = await call(cut.url, 'POST', '/api/v1/responses', {
        key,
        body: { workflowId: 'hold-no-temporal', inputs: { subject: 'x' } },
      });
      // A closed connection reaches no server: 503 with Retry-After, as an unreachable one (api/temporal/grpc-errors.ts).
      assert.equal(res.status, 503, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'service_unavailable');
      assert.equal(res.headers.get('retry-after'), '2');
    } finally {
      await cut.close().catch(() => undefined);
    }
    assert.equal(await c.runs.countDocuments({ account_id: accountId }), 0);
    const releases = await c.ledger.find({ account_id: accountId, kind: 'release' }).toArray();
    assert.deepEqual(
      releases.map((e) => [e.amount_usd, e.released_usd]),
      [[0, IMAGE_HOLD_USD]],
    );
    assert.deepEqual(await accountCredit(c, accountId), {
      balance_usd: 0.005,
      held_usd: 0,
      available_usd: 0.005,
    });
    // The credit is there for a start that works.
    await startRun(svc.url, key, 'hold-no-temporal', { subject: 'y' });
  });
});
