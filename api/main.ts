/** API entry: `npm run api`. Serves until SIGINT/SIGTERM, then drains (docs/deploy.md "Draining"). */
import { loadConfig } from '../config';
import { installLastResort } from './last-resort';
import { createLogger } from './logger';
import { listenApi } from './start-api';
import { DRAIN_CLOSE_MARGIN_MS } from './drain';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel, 'wrs-api');
  // Listening before Temporal answers: the probes answer while it is still unreachable, and calls
  // that need it answer 503 until then (api/start-api.ts listenApi).
  const api = await listenApi(config, logger);
  // From here on no request can take the process down: what escapes one is logged and answered
  // 500 (api/last-resort.ts says why). A failure while starting still ends the process.
  installLastResort(logger);
  logger.info({ url: api.url }, 'API listening');
  const { delayMs, graceMs } = config.api.shutdown;
  let draining = false;
  api.temporal.then(
    () => logger.info('Temporal connected'),
    (err: unknown) => {
      if (draining) return; // the drain ended the wait
      logger.error({ err }, 'Temporal set-up failed');
      process.exit(1);
    },
  );
  const stop = async (signal: NodeJS.Signals) => {
    if (draining) return;
    draining = true;
    const began = Date.now();
    logger.info({ signal, delayMs, graceMs }, 'API draining');
    // The orchestrator's own deadline (terminationGracePeriodSeconds, stop_grace_period) is set
    // above this; a dependency that never lets go must not make it the one to end the process.
    setTimeout(
      () => {
        logger.error('API drain did not finish in time; exiting');
        process.exit(1);
      },
      delayMs + graceMs + DRAIN_CLOSE_MARGIN_MS,
    ).unref();
    const stats = await api.shutdown({ delayMs, graceMs });
    logger.info({ ...stats, ms: Date.now() - began }, 'API drained');
    process.exit(0);
  };
  // A second signal (an impatient Ctrl-C) changes nothing: the drain is bounded already.
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
