/**
 * The request's one `Authorization` header. Node keeps the first of several and drops the rest,
 * while a proxy in front may read (authorize, log, rate) the last: two headers would let the API
 * and the proxy disagree about who is calling, so more than one is refused, as a query parameter
 * given twice is.
 */
import type { Context } from 'koa';
import { InvalidRequestError } from '../../domain/errors';

/** The `Authorization` value ('' when absent); throws a 400 naming the header when it is given more than once. */
export function authorizationHeader(ctx: Context): string {
  const { rawHeaders } = ctx.req;
  let given = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]; // on every request: no lower-casing of names of another length
    if (name.length === 13 && name.toLowerCase() === 'authorization') given += 1;
  }
  if (given > 1)
    throw new InvalidRequestError(
      'Invalid headers: `Authorization` is given more than once (send one).',
      {
        param: 'Authorization',
        details: [{ field: 'Authorization', problem: 'is given more than once' }],
      },
    );
  return ctx.get('authorization');
}
