/**
 * What `npm start` (tools/scripts/start.ts, the one-machine development stack) reads from the environment:
 * the ports of the servers it starts and where their data lives. Parsed once, here, like config/index.ts,
 * so two clones can run side by side by setting other ports and nothing else reads process.env.
 */
import path from 'node:path';
import { z } from 'zod';
import { EnvSchema } from './index';

const port = (fallback: number) => z.coerce.number().int().min(1).max(65535).default(fallback);

export const DevStackEnvSchema = z.object({
  API_PORT: EnvSchema.shape.API_PORT,
  TEMPORAL_PORT: port(7233),
  TEMPORAL_UI_PORT: port(8233),
  MONGO_PORT: port(27027),
  /** Temporal's and FerretDB's data, the demo key; relative to the repository root. */
  DATA_DIR: z.string().min(1).default('.data'),
  /** Set: use that Temporal server instead of starting one. */
  TEMPORAL_ADDRESS: z.string().optional(),
  /** Set: use that MongoDB instead of starting FerretDB. */
  MONGODB_URI: z.string().optional(),
});

/** A port `npm start` binds, with the variable that moves it. */
export interface DevPort {
  name: string;
  port: number;
  variable: 'API_PORT' | 'TEMPORAL_PORT' | 'TEMPORAL_UI_PORT' | 'MONGO_PORT';
}

export interface DevStackConfig {
  dataDir: string;
  api: DevPort;
  /** Null when TEMPORAL_ADDRESS names a server of the caller's own. */
  temporal: { server: DevPort; ui: DevPort } | null;
  /** Null when MONGODB_URI names a server of the caller's own. */
  mongo: DevPort | null;
}

/** Parses the dev stack's variables; throws one readable error naming every bad one. */
export function loadDevStackConfig(
  env: Record<string, string | undefined>,
  repoRoot: string,
): DevStackConfig {
  const parsed = DevStackEnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  return {
    dataDir: path.resolve(repoRoot, e.DATA_DIR),
    api: { name: 'the API', port: e.API_PORT, variable: 'API_PORT' },
    temporal: e.TEMPORAL_ADDRESS
      ? null
      : {
          server: { name: 'the Temporal server', port: e.TEMPORAL_PORT, variable: 'TEMPORAL_PORT' },
          ui: { name: 'the Temporal UI', port: e.TEMPORAL_UI_PORT, variable: 'TEMPORAL_UI_PORT' },
        },
    mongo: e.MONGODB_URI
      ? null
      : { name: 'FerretDB (MongoDB)', port: e.MONGO_PORT, variable: 'MONGO_PORT' },
  };
}

/** The ports this configuration binds, in start order. */
export function devPorts(c: DevStackConfig): DevPort[] {
  return [
    ...(c.temporal ? [c.temporal.server, c.temporal.ui] : []),
    ...(c.mongo ? [c.mongo] : []),
    c.api,
  ];
}
