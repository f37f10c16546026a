/**
 * When the D17 gate refreshes an account's remembered ledger sum: only while a newer sum could
 * change a decision (a sum only grows, so it matters once it is what cuts a lease).
 */
import assert from 'node:assert/strict';
import { LEASE_HOLDS, sumCanMatter } from '../../../api/limits/credit-check';

describe('sumCanMatter (D17: refresh a sum only where it decides)', () => {
  const hold = 0.01;
  const cut = 16 * LEASE_HOLDS * hold; // below this, 1/16 of what is available is the lease

  it('leaves a rich account unsummed: what it has left covers full leases many times over', () => {
    assert.equal(sumCanMatter(100, hold), false);
    assert.equal(sumCanMatter(2 * cut + 0.01, hold), false);
  });

  it('refreshes before a lease would be cut, and whenever nothing is left', () => {
    assert.equal(sumCanMatter(2 * cut, hold), true);
    assert.equal(sumCanMatter(cut, hold), true);
    assert.equal(sumCanMatter(0, hold), true);
    assert.equal(sumCanMatter(-hold, hold), true, 'the last admitted hold took it below zero');
  });

  it('runs that hold nothing: refreshed only once nothing is left', () => {
    assert.equal(sumCanMatter(5, 0), false);
    assert.equal(sumCanMatter(0, 0), true);
  });
});
