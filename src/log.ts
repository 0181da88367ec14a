/**
 * Log lines on standard error: plain sentences for people, or one JSON object per line
 * (`--json-log`, via pino) for log collectors. Callers pass fields, never request bodies,
 * personal data or the API key.
 */
import { pino } from 'pino';
import type { Io } from './io.js';

export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export function createLogger(io: Io, options: { json: boolean; quiet?: boolean }): Logger {
  if (options.json) {
    const log = pino(
      { base: { name: 'quote-batch' }, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } },
      { write: (line: string) => io.err(line) },
    );
    return {
      info: (message, fields) => log.info(fields ?? {}, message),
      warn: (message, fields) => log.warn(fields ?? {}, message),
      error: (message, fields) => log.error(fields ?? {}, message),
    };
  }
  const write = (prefix: string, message: string): void => io.err(`${prefix}${message}\n`);
  return {
    info: (message) => {
      if (options.quiet !== true) write('', message);
    },
    warn: (message) => write('warning: ', message),
    // An error's hint (what to do) on a line of its own, as the command line's own errors print it.
    error: (message, fields) => {
      write('error: ', message);
      if (typeof fields?.hint === 'string' && fields.hint !== '') write('hint: ', fields.hint);
    },
  };
}
