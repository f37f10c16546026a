/** GET /api/v1/openapi.json (D25): the API description, public like the docs it replaces. */
import Router from '@koa/router';
import { buildOpenApiDocument } from '../contract/openapi-document';
import type { Config } from '../../config';

/** What the document route uses: the public base URL the document names as its server. */
export interface OpenapiRouteDeps {
  config: Pick<Config, 'api'>;
}

/** Routes serving the OpenAPI document (built once per process). */
export function openapiRoutes(deps: OpenapiRouteDeps): Router {
  const router = new Router();
  const document = buildOpenApiDocument(deps.config.api.publicBaseUrl);
  router.get('/api/v1/openapi.json', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = document;
  });
  return router;
}
