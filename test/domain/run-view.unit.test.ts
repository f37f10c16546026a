/**
 * D20: how a run shows its webhook delivery (domain/run-view.ts webhookState): attempts that go
 * on are `delivering`, and a delivery a day and an hour past its run's end that never settled
 * (its workflow terminated from Temporal, so no give-up was written) is `failed`, so a client
 * waiting for the run to settle stops.
 */
import assert from 'node:assert/strict';
import { webhookState, type DeliverySource } from '../../domain/run-view';
import { WEBHOOK_DELIVERY_WINDOW_MS } from '../../domain/run';

const HOUR = 3_600_000;
const ended = Date.parse('2026-11-01T00:00:00Z');
const retried: DeliverySource = {
  status: 'pending',
  attempts: 3,
  last_status: 503,
  last_error: 'HTTP 503',
  updated_at: new Date(ended + HOUR),
};

describe("domain: a run's webhook state (D20)", () => {
  it('is pending before any attempt and delivering while failed attempts go on', () => {
    assert.equal(webhookState(null, null, ended).status, 'pending');
    assert.equal(webhookState(null, ended, ended + HOUR).status, 'pending');
    assert.deepEqual(webhookState(retried, ended, ended + 2 * HOUR), {
      status: 'delivering',
      attempts: 3,
      last_http_status: 503,
      last_error: 'HTTP 503',
      updated_at: '2026-11-01T01:00:00.000Z',
    });
  });

  it('is failed once unsettled past the window and an hour, with the reason it has', () => {
    const late = ended + WEBHOOK_DELIVERY_WINDOW_MS + HOUR + 1;
    assert.equal(webhookState(retried, ended, late - 2).status, 'delivering');
    assert.deepEqual(webhookState(retried, ended, late), {
      ...webhookState(retried, ended, ended),
      status: 'failed',
    });
    assert.deepEqual(webhookState(null, ended, late), {
      status: 'failed',
      attempts: 0,
      last_http_status: null,
      last_error: "not delivered within 24 h of the run's end",
      updated_at: null,
    });
  });

  it('keeps what a settled delivery says, however old', () => {
    const late = ended + 10 * WEBHOOK_DELIVERY_WINDOW_MS;
    const delivered = {
      ...retried,
      status: 'delivered' as const,
      last_status: 200,
      last_error: null,
    };
    assert.equal(webhookState(delivered, ended, late).status, 'delivered');
    const given = { ...retried, status: 'failed' as const, last_error: 'HTTP 410' };
    assert.equal(webhookState(given, ended, late).last_error, 'HTTP 410');
    assert.equal(webhookState(null, null, late).status, 'pending'); // a run still going
    assert.equal(webhookState(retried, ended).status, 'delivering'); // no reader's clock: as stored
  });
});
