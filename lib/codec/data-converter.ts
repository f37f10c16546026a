/** D32: the DataConverter every Temporal client and worker of the service uses (the codec plus encoded failures). */
import type { DataConverter } from '@temporalio/common';
import type { Db } from 'mongodb';
import type { Config } from '../../config';
import { loadKeyRing } from './keys';
import { runPayloadSecret } from '../../store/run-secrets';
import { EncryptionCodec } from './payload-codec';
import { RunSecrets, SECRET_TTL_MS } from './run-keys';
import { retrying } from '../retrying';
import { isStoreUnreachable } from '../../store/db';

/** Path of the failure converter module, for the workflow bundle (bundleWorkflowCode's failureConverterPath). */
export const FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

/** How a process's Temporal payloads are protected: the codec (absent only when PAYLOAD_ENCRYPTION=false) and its converter. */
export interface PayloadProtection {
  codec?: EncryptionCodec;
  dataConverter: DataConverter;
}

/**
 * The payload protection of this configuration; keys are read on first use, so this needs no round
 * trip. `storeRetryMs` (workers): how long a first read of the key ring or of a run's secret waits
 * out a failing store instead of failing at once, as the API must (503).
 */
export function payloadProtection(
  config: Pick<Config, 'codec'>,
  db: Db,
  opts: { storeRetryMs?: number } = {},
): PayloadProtection {
  // The failure converter stays even without the codec: the workflow bundle always carries it (worker/create-worker.ts).
  if (!config.codec.enabled)
    return { dataConverter: { failureConverterPath: FAILURE_CONVERTER_PATH } };
  // D39: each run's payloads under its own key, derived from the secret on its record.
  const retry = opts.storeRetryMs
    ? { forMs: opts.storeRetryMs, retryable: isStoreUnreachable }
    : undefined;
  const loadKeys = () => loadKeyRing(config, db);
  const codec = new EncryptionCodec(
    retry ? () => retrying(loadKeys, retry) : loadKeys,
    new RunSecrets((runId) => runPayloadSecret(db, runId), SECRET_TTL_MS, retry),
  );
  return {
    codec,
    dataConverter: { payloadCodecs: [codec], failureConverterPath: FAILURE_CONVERTER_PATH },
  };
}
