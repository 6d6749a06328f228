// Logs are safe to read: control characters in any logged value are escaped (an ESC [2J in a Node
// annotation must not clear the operator's terminal, a newline must not forge a line), and credentials
// embedded in URLs (`--etcd-endpoints=http://user:pass@host:2379`), HTTP credentials and secret-named
// fields are never written.
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import winston from 'winston';
import { componentLogger, createLogger } from '../../../src/basics/log.js';
import { registerPemSecret, registerSecret, safeText, safeValue } from '../../../src/basics/log-safe.js';

async function logged(format: 'text' | 'json', write: (log: ReturnType<typeof createLogger>) => void): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'log-safe-'));
  try {
    const file = join(dir, 'flanneld.log');
    // The console lines go nowhere: the file is what is read.
    const log = createLogger({ format, file, stream: new Writable({ write: (_chunk, _enc, done) => done() }), level: 'debug' });
    write(log);
    // The file is written once the File transport's own stream is finished: since winston 3.19 its
    // 'finish' waits for the file write (winstonjs/winston#2594, fixing #1504); the logger's comes earlier.
    const fileWritten = Promise.all(
      log.transports.filter((t) => t instanceof winston.transports.File).map((t) => new Promise<void>((resolve) => t.once('finish', () => resolve()))),
    );
    log.end();
    await fileWritten;
    return readFileSync(file, 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const HOSTILE = 'x\u001b[2J\u001b]0;owned\u0007\r\nFAKE 2026 ERROR forged\u009b2J\u007f';

describe.each(['text', 'json'] as const)('%s log format', (format) => {
  it('escapes control characters in the message, fields, nested fields and keys', async () => {
    const out = await logged(format, (log) => {
      componentLogger(log, 'kube').warn(`bad annotation ${HOSTILE}`, { value: HOSTILE, nested: { list: [HOSTILE] }, [`k${HOSTILE}`]: 1 });
    });
    // eslint-disable-next-line no-control-regex -- asserting their absence
    expect(out.trimEnd()).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(out.trimEnd().split('\n')).toHaveLength(1);
    expect(out).toContain(format === 'json' ? '\\\\u001b[2J' : '\\u001b[2J');
  });

  it('redacts credentials embedded in URLs', async () => {
    const out = await logged(format, (log) => {
      log.info('Etcd Local Manager with Previous Subnet: None', { endpoints: 'http://root:s3cret@10.0.0.5:2379,https://u:p%40ss@etcd:2379' });
      log.error('cannot reach http://admin:hunter2@10.0.0.5:2379/v3/kv', { nested: ['https://tok3n@h:1'] });
    });
    for (const secret of ['s3cret', 'p%40ss', 'hunter2', 'tok3n', 'root:', 'admin:']) expect(out).not.toContain(secret);
    expect(out).toContain('http://***@10.0.0.5:2379');
    expect(out).toContain('https://***@etcd:2379');
  });
});

describe('credentials in messages and fields', () => {
  it.each(['text', 'json'] as const)('%s: Bearer/Basic credentials and secret-named fields are redacted', async (format) => {
    const out = await logged(format, (log) => {
      log.warn('request failed', {
        error: 'HTTP 401: request headers {"Authorization":"Bearer eyJhbGciOi.c2VjcmV0.sig"}',
        nested: { headers: { authorization: 'Basic dXNlcjpwYXNz' } },
      });
      log.debug('kubeconfig', { token: 'tok-123', etcdPassword: 'pw-456', user: { password: 'pw-789' } });
    });
    for (const secret of ['eyJhbGciOi', 'c2VjcmV0', 'dXNlcjpwYXNz', 'tok-123', 'pw-456', 'pw-789']) expect(out).not.toContain(secret);
    expect(out).toContain('Bearer ***');
  });
});

describe('secrets registered by value', () => {
  // The etcd password as gRPC names the endpoint: no URL pattern matches `dns:user:pass@host`.
  const PASSWORD = 'Pa55-w0rd@etcd';
  registerSecret('test-password', PASSWORD);
  registerSecret('test-short', 'ab'); // too short to redact by value: ordinary words would vanish
  registerPemSecret('test-key', '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n');

  it.each(['text', 'json'] as const)('%s: wherever the value appears (message, fields, errors, URL-encoded)', async (format) => {
    const out = await logged(format, (log) => {
      log.warn(`retrying: 14 UNAVAILABLE: Name resolution failed for target dns:flannel:${PASSWORD}@10.0.0.5:2379`, {
        target: `dns:flannel:${PASSWORD}@10.0.0.5:2379`,
        encoded: `http://h/?p=${encodeURIComponent(PASSWORD)}`,
        error: new Error(`auth failed for ${PASSWORD}`),
        nested: { list: [`x${PASSWORD}x`] },
        pem: 'key line MIIEvQIBADANBgkqhkiG9w0BAQEFAASC',
        short: 'about',
      });
    });
    for (const secret of [PASSWORD, encodeURIComponent(PASSWORD), 'Pa55', 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC']) expect(out).not.toContain(secret);
    expect(out).toContain('dns:flannel:***@10.0.0.5:2379');
    expect(out).toContain('about');
  });

  it('safeText (what main.ts prints on stderr) redacts them too', () => {
    expect(safeText(`cannot connect to dns:u:${PASSWORD}@h:1`)).toBe('cannot connect to dns:u:***@h:1');
    expect(safeText('about a tab')).toBe('about a tab');
  });
});

describe("credentials inside messages (a credential plugin's stderr, an error body)", () => {
  it.each([
    ['exec plugin failed: token=eyJhbGc.payload.sig expired', 'exec plugin failed: token=*** expired'],
    ['password: hunter2, retry', 'password: ***, retry'],
    ['{"access_token":"ya29.a0AfH6","expires_in":3599}', '{"access_token":"***","expires_in":3599}'],
    ['client_secret=abc&grant=x', 'client_secret=***&grant=x'],
    ["ETCD_PASSWORD='q1w2e3'", "ETCD_PASSWORD='***'"],
    ['api-key: k-123 and X-Api-Key=k-456', 'api-key: *** and X-Api-Key=***'],
    ['{"Authorization":"Bearer eyJhbGciOi.c2VjcmV0.sig"}', '{"Authorization":"Bearer ***"}'],
    ['flags -etcd-password and -etcd-password-file are both set', 'flags -etcd-password and -etcd-password-file are both set'],
    ['no token in file /var/run/token', 'no token in file /var/run/token'],
  ])('%j -> %j', (input, want) => expect(safeText(input)).toBe(want));
});

describe('safeText', () => {
  it.each([
    ['http://host:2379', 'http://host:2379'],
    ['http://host/a@b', 'http://host/a@b'],
    ['http://host?x=a@b', 'http://host?x=a@b'],
    ['user@example.com', 'user@example.com'],
    ['tab\there', 'tab\\u0009here'],
    // a password holding `/` (the userinfo runs to the last `@`)
    ['cannot reach http://flannel:ab/cd@10.0.0.5:2379/v3', 'cannot reach http://***@10.0.0.5:2379/v3'],
    ['http://u:a/b@h:1,https://v:c?d@g:2', 'http://***@h:1,https://***@g:2'],
    // "Trojan Source" (CVE-2021-42574): bidi overrides and isolates, line/paragraph separators
    ['admin\u202e gnp.exe\u202c', 'admin\\u202e gnp.exe\\u202c'],
    ['a\u2066b\u2069c\u2028d\u2029', 'a\\u2066b\\u2069c\\u2028d\\u2029'],
  ])('%j -> %j', (input, want) => expect(safeText(input)).toBe(want));
});

describe('safeValue: objects that are not plain', () => {
  it('a URL, a Map, a class instance are rendered as text and redacted', () => {
    const url = new URL('http://flannel:s3cr3t-pw@10.0.0.5:2379/v3');
    expect(safeValue(url)).toBe('"http://***@10.0.0.5:2379/v3"');
    expect(safeValue({ nested: { endpoint: url } })).toEqual({ nested: { endpoint: '"http://***@10.0.0.5:2379/v3"' } });
    class Target {
      constructor(readonly target: string) {}
    }
    expect(safeValue(new Target('http://u:pw-9999@h:1\u001b[2J'))).toBe('{"target":"http://***@h:1\\u001b[2J"}');
    expect(safeValue(new Map([['k', 'v']]))).toBe('{}');
    expect(safeValue(new Error('auth http://u:pw-9999@h:1'))).toBe('auth http://***@h:1');
  });
});

describe('registered secrets: one slot per source', () => {
  it('a rotated token replaces the one before, the set stays bounded', () => {
    for (let i = 0; i < 100; i++) registerSecret('test-rotating-token', `rotating-token-${i}`);
    expect(safeText('sent rotating-token-99')).toBe('sent ***');
    // Every value before it is gone from the set (the source holds one value): none is redacted any more.
    for (let i = 0; i < 99; i++) expect(safeText(`sent rotating-token-${i} `)).toBe(`sent rotating-token-${i} `);
    registerSecret('test-rotating-token', undefined);
    expect(safeText('sent rotating-token-99')).toBe('sent rotating-token-99');
  });
});
