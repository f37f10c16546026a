/**
 * The request's one `Authorization` header. Node keeps the first of several and drops the rest,
 * while a proxy in front may read (authorize, log, rate) the last: two headers would let the API
 * and the proxy disagree about who is calling, so more than one is refused as credentials that
 * cannot be told (401, like a wrong key: a refusal anyone can make without a key, which the
 * API's error-rate alert leaves out of its whole, docs/deploy.md "Monitoring").
 */
import type { Context } from 'koa';
import { AuthenticationError } from '../../domain/errors';

/**
 * The `Authorization` value ('' when absent); throws a 401 of `code` (the route's code for a
 * refused credential) when the header is given more than once.
 */
export function authorizationHeader(ctx: Context, code = 'invalid_api_key'): string {
  const { rawHeaders } = ctx.req;
  let given = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]; // on every request: no lower-casing of names of another length
    if (name.length === 13 && name.toLowerCase() === 'authorization') given += 1;
  }
  if (given > 1)
    throw new AuthenticationError(
      '`Authorization` is given more than once: send one `Authorization: Bearer <API_KEY>` header.',
      code,
    );
  return ctx.get('authorization');
}
