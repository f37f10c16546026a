/** Structured JSON logs (pino). Keys never reach a log line: only `key_` record ids do (D6). */
import pino from 'pino';

export type Logger = pino.Logger;

/** A logger at the configured level, redacting anything that looks like a credential; stdout unless `destination` is given (tests). */
export function createLogger(
  level: string,
  name = 'wrs',
  destination?: pino.DestinationStream,
): Logger {
  const options = {
    name,
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'authorization',
        '*.authorization',
        'secret',
        'api_key',
        'token', // D32: the codec token, should a log call ever name it
        '*.token',
      ],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
