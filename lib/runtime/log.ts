// pino JSON logs. Every line of a message's processing carries msgId (and kind / flid when known).
// Every line passes through scrub (lib/core/secrets.ts): no password, URL password or private key
// of the configuration is ever written, whatever object a line carries.
import { pino, type Logger } from 'pino';
import { scrub } from '../core/secrets.ts';

export function createLogger(name: string, level = 'info'): Logger {
  return pino({ name, level, base: { process: name }, timestamp: pino.stdTimeFunctions.isoTime, hooks: { streamWrite: scrub } });
}

export type { Logger };
