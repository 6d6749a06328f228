// createLogger's output stream (how tests read logs without patching stderr) and the shared log sink
// built on it.
import { describe, expect, it } from '@jest/globals';
import { Writable } from 'node:stream';
import winston from 'winston';
import { componentLogger, createLogger } from '../../../src/basics/log.js';
import { logSink } from '../../support/log-sink.js';

describe('createLogger({ stream })', () => {
  it('writes its lines to the stream, in the text format, at the level asked for', () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const log = createLogger({ level: 'info', stream });
    componentLogger(log, 'kube').info('lease acquired', { subnet: '10.244.7.0/24' });
    log.debug('not at info');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\S+ INFO \[kube\] lease acquired subnet=10\.244\.7\.0\/24\n$/);
  });

  it("drops a component's message below the level before winston formats it", () => {
    let formatted = 0;
    const counted = winston.format((info) => {
      formatted++;
      return info;
    });
    const root = winston.createLogger({
      level: 'info',
      format: counted(),
      transports: [new winston.transports.Stream({ stream: new Writable({ write: (_c, _e, done) => done() }) })],
    });
    const log = componentLogger(root, 'reconcile');
    log.debug('reconcile pass', { added: 1 });
    expect(formatted).toBe(0);
    log.info('reconcile pass', { added: 1 });
    expect(formatted).toBe(1);
  });
});

describe('logSink', () => {
  it('keeps each json entry as production would write it (level, message, timestamp, redacted fields)', () => {
    const { log, entries } = logSink('info');
    componentLogger(log, 'etcd').warn('cannot reach etcd', { endpoint: 'http://user:pass@10.0.0.1:2379', token: 'abc' });
    log.debug('below the level');
    expect(entries).toEqual([
      { level: 'warn', message: 'cannot reach etcd', component: 'etcd', endpoint: 'http://***@10.0.0.1:2379', token: '***', timestamp: expect.any(String) },
    ]);
  });
});
