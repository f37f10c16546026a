/**
 * The options of a connection to Temporal (TLS, mTLS, API key) from the parsed config, in the shape
 * both the client's Connection and the worker's NativeConnection take, and fail-over across several frontends.
 */
import fs from 'node:fs';
import type { Config } from './index';

/** What Connection.connect and NativeConnection.connect both accept. */
export interface TemporalConnectOptions {
  address: string;
  tls?: {
    serverNameOverride?: string;
    serverRootCACertificate?: Buffer;
    clientCertPair?: { crt: Buffer; key: Buffer };
  };
  apiKey?: string;
  metadata?: Record<string, string>;
}

/** Connection options for one frontend `address`; certificate files are read now (restart to pick up renewed ones). */
export function temporalConnectOptions(
  temporal: Config['temporal'],
  address = temporal.address,
): TemporalConnectOptions {
  const { tls, apiKey } = temporal;
  return {
    address,
    ...(tls && {
      tls: {
        ...(tls.serverName && { serverNameOverride: tls.serverName }),
        ...(tls.caFile && { serverRootCACertificate: fs.readFileSync(tls.caFile) }),
        ...(tls.certFile &&
          tls.keyFile && {
            clientCertPair: {
              crt: fs.readFileSync(tls.certFile),
              key: fs.readFileSync(tls.keyFile),
            },
          }),
      },
    }),
    // Temporal Cloud routes an API-key call by this header (its docs ask for it with API keys).
    ...(apiKey && { apiKey, metadata: { 'temporal-namespace': temporal.namespace } }),
  };
}

/**
 * Connects to the first frontend of TEMPORAL_ADDRESS that answers, in order; throws the last failure.
 * One address (a load balancer or a DNS name over all frontends) is the usual production setup.
 */
export async function connectFirst<T>(
  temporal: Config['temporal'],
  connect: (options: TemporalConnectOptions) => Promise<T>,
): Promise<T> {
  let lastError: unknown;
  for (const address of temporal.addresses) {
    try {
      return await connect(temporalConnectOptions(temporal, address));
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}
