import type { AuthContext } from './auth/auth-context';

declare module 'koa' {
  interface Request {
    /** The parsed JSON body (middleware/json-body.ts). */
    body?: unknown;
  }
  interface DefaultState {
    auth?: AuthContext;
    /** The path to log when the real one holds a secret (the codec server's token form, routes/codec.ts). */
    logPath?: string;
    /** An error answer's envelope `code`, for the request's log line (middleware/error-handler.ts). */
    errorCode?: string;
    /** The id this answer carries as `X-Request-Id` and its log lines as `request_id` (middleware/request-log.ts). */
    requestId?: string;
  }
}
