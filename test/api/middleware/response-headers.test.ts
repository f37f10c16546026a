/**
 * Headers every answer carries (api/middleware/response-headers.ts): `nosniff` on all of them, and
 * `Cache-Control: no-store` on the API's, errors included, so a browser app's calls leave no copy of
 * an account's data in the disk cache; a route that means otherwise (the public OpenAPI document,
 * a file's signed link) says so itself.
 */
import assert from 'node:assert/strict';
import { call } from '../../support/http';
import { useService } from '../../support/use-service';

describe('headers on every answer', function () {
  this.timeout(60_000);
  const ctx = useService();

  it('nosniff everywhere, no-store on the API’s answers and errors; the OpenAPI document keeps its own', async () => {
    const answers = {
      runs: await call(ctx.svc.url, 'GET', '/api/v1/runs', { key: ctx.key }),
      missing: await call(ctx.svc.url, 'GET', '/api/v1/runs/run_nope', { key: ctx.key }),
      unauthenticated: await call(ctx.svc.url, 'GET', '/api/v1/account'),
      health: await call(ctx.svc.url, 'GET', '/healthz'),
      openapi: await call(ctx.svc.url, 'GET', '/api/v1/openapi.json'),
    };
    const seen = Object.fromEntries(
      Object.entries(answers).map(([name, res]) => [
        name,
        [res.status, res.headers.get('x-content-type-options'), res.headers.get('cache-control')],
      ]),
    );
    assert.deepEqual(seen, {
      runs: [200, 'nosniff', 'no-store'],
      missing: [404, 'nosniff', 'no-store'],
      unauthenticated: [401, 'nosniff', 'no-store'],
      health: [200, 'nosniff', null],
      openapi: [200, 'nosniff', 'public, max-age=300'],
    });
  });
});
