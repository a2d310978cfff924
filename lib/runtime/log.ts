// pino JSON logs. Every line of a message's processing carries msgId (and kind / flid when known).
import { pino, type Logger } from 'pino';

export function createLogger(name: string, level = 'info'): Logger {
  return pino({ name, level, base: { process: name }, timestamp: pino.stdTimeFunctions.isoTime });
}

export type { Logger };
