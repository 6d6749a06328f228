// winston logging: one root logger configured from flags, one child logger per component.
// Facts go in fields (`log.info('route added', { dest, nextHop })`); secrets never do.
import winston from 'winston';
import { safeField } from './log-safe.js';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
export type Logger = winston.Logger;

export interface LogOptions {
  level?: LogLevel;
  format?: 'text' | 'json';
  /** Size-rotated log file (in addition to stderr). */
  file?: string;
  /** Where the console lines go (default stderr; a test reads them from its own stream). */
  stream?: NodeJS.WritableStream;
}

const LOG_FILE_MAX_BYTES = 10 * 1024 * 1024;
const LOG_FILE_KEEP = 5;

function textFormat(): winston.Logform.Format {
  return winston.format.printf((info) => {
    const { level, message, timestamp, component, ...fields } = info as Record<string, unknown>;
    const extra = Object.entries(fields)
      .filter(([k, v]) => v !== undefined && typeof k === 'string')
      .map(([k, v]) => `${k}=${typeof v === 'string' && !/\s|"/.test(v) ? v : JSON.stringify(v)}`)
      .join(' ');
    const comp = component ? `[${typeof component === 'string' ? component : JSON.stringify(component)}] ` : '';
    return `${String(timestamp)} ${String(level).toUpperCase()} ${comp}${String(message)}${extra ? ' ' + extra : ''}`;
  });
}

/** Escape control characters and redact credentials in the message and every field (./log-safe.ts). */
const safeFields = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (key === 'level') continue;
    const [safeKey, safe] = safeField(key, info[key]);
    if (safeKey !== key) delete info[key];
    info[safeKey] = safe;
  }
  return info;
});

export function createLogger(opts: LogOptions = {}): Logger {
  const format =
    opts.format === 'json'
      ? winston.format.combine(safeFields(), winston.format.timestamp(), winston.format.json())
      : winston.format.combine(safeFields(), winston.format.timestamp(), textFormat());
  const transports: winston.transport[] = [
    opts.stream ? new winston.transports.Stream({ stream: opts.stream }) : new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'debug'] }),
  ];
  if (opts.file) {
    transports.push(new winston.transports.File({ filename: opts.file, maxsize: LOG_FILE_MAX_BYTES, maxFiles: LOG_FILE_KEEP, tailable: true }));
  }
  return winston.createLogger({ level: opts.level ?? 'info', format, transports });
}

/** A logger that drops everything (default for library code and tests). */
export function silentLogger(): Logger {
  return winston.createLogger({ silent: true, transports: [new winston.transports.Console({ silent: true })] });
}

/**
 * The component's logger. Its methods for levels the root drops do nothing: winston formats every
 * message (safeFields, timestamp, JSON) through its streams and leaves the dropping to the transports, which
 * cost a node event's routine debug line about 40 µs (docs/performance.md, 50,000 Nodes).
 */
export function componentLogger(root: Logger, component: string): Logger {
  const child = root.child({ component });
  const drop: winston.LeveledLogMethod = () => child;
  for (const level of ['debug', 'info', 'warn'] as const) if (!root.isLevelEnabled(level)) child[level] = drop;
  return child;
}
