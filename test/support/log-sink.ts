// A logger for tests that keeps what it writes: the agent's own createLogger (../../src/basics/log.ts), in
// json format, writing into a stream that parses each line into an entry, as pino's test helper
// `sink()` does. Entries carry what production logs would (level, message, timestamp, the fields after
// redaction), so tests read the log an operator would read.
import { Writable } from 'node:stream';
import { createLogger, type Logger, type LogLevel } from '../../src/basics/log.js';

export type LogEntry = Record<string, unknown>;

export function logSink(level: LogLevel = 'debug'): { log: Logger; entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line) entries.push(JSON.parse(line) as LogEntry);
      done();
    },
  });
  return { log: createLogger({ format: 'json', level, stream }), entries };
}
