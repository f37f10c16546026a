import type { AuthContext } from './middleware/authenticate';

declare module 'koa' {
  interface Request {
    /** The parsed JSON body (middleware/json-body.ts). */
    body?: unknown;
  }
  interface DefaultState {
    auth?: AuthContext;
  }
}
