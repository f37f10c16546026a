/** GET /api/v1/openapi.json (D25): the API description, public like the docs it replaces. */
import Router from '@koa/router';
import { buildOpenApiDocument } from '../contract/openapi-document';
import type { AppDeps } from '../deps';

/** Routes serving the OpenAPI document (built once per process). */
export function openapiRoutes(deps: AppDeps): Router {
  const router = new Router();
  const document = buildOpenApiDocument(deps.config.api.publicBaseUrl);
  router.get('/api/v1/openapi.json', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = document;
  });
  return router;
}
