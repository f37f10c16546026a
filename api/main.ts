/** API entry: `npm run api`. Serves until SIGINT/SIGTERM. */
import { loadConfig } from '../config';
import { installLastResort } from './last-resort';
import { createLogger } from './logger';
import { startApi } from './start-api';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel, 'wrs-api');
  const api = await startApi(config, logger);
  // From here on no request can take the process down: what escapes one is logged and answered
  // 500 (api/last-resort.ts says why). A failure while starting still ends the process.
  installLastResort(logger);
  logger.info({ url: api.url }, 'API listening');
  const stop = async () => {
    await api.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
