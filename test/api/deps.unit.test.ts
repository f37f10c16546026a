/** A route is given only the dependencies it names (api/deps.ts `only`, used by api/app.ts). */
import assert from 'node:assert/strict';
import { only, type RouteDeps } from '../../api/deps';

describe('route dependencies (api/deps.ts)', () => {
  it('cuts exactly the named fields, the same objects, nothing else', () => {
    const db = {};
    const drain = {};
    const deps = { db, drain, gateway: {}, credits: {}, config: {} } as unknown as RouteDeps;
    const picked = only(deps, 'db', 'drain');
    assert.deepEqual(Object.keys(picked).sort(), ['db', 'drain']);
    assert.equal(picked.db, db);
    assert.equal(picked.drain, drain);
  });
});
