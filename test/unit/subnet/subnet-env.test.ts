import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeSubnetEnvFs } from '../../../src/basics/fs.js';
import { encodeSubnetEnv, parseSubnetEnv, previousSubnetFromEnv, readSubnetEnv, SUBNET_ENV_RENAME_RETRY, writeSubnetEnv } from '../../../src/subnet/subnet-env.js';
import type { SubnetEnvValues } from '../../../src/subnet/subnet-env.js';
import type { SubnetEnvFs } from '../../../src/basics/fs.js';
import { isFlannelError, SubnetEnvError, type FlannelError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';
import { FakeClock } from '../../support/fake-clock.js';

describe('encodeSubnetEnv', () => {
  it('matches the docs/compatibility.md §4 example byte for byte', () => {
    const text = encodeSubnetEnv({ network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1450, ipMasq: true });
    expect(Buffer.from(text)).toEqual(Buffer.from('FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n'));
  });

  it.each([
    [
      { network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1500, ipMasq: false },
      'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=false\n',
    ],
    [
      // host bits masked in NETWORK, subnet written as first address + 1
      { network: '10.5.0.1/16', subnet: '10.5.52.0/26', mtu: 1450, ipMasq: true },
      'FLANNEL_NETWORK=10.5.0.0/16\nFLANNEL_SUBNET=10.5.52.1/26\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n',
    ],
    [
      // upstream order with IPv6: IPv4 pair, IPv6 pair, MTU, IPMASQ (pkg/subnet/subnet.go WriteSubnetFile)
      {
        network: '10.244.0.0/16',
        subnet: '10.244.3.0/24',
        mtu: 1450,
        ipMasq: true,
        ipv6Network: 'fd00:0012:0013::/48',
        ipv6Subnet: 'fd00:12:13:52::/64',
      },
      'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_IPV6_NETWORK=fd00:12:13::/48\nFLANNEL_IPV6_SUBNET=fd00:12:13:52::1/64\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n',
    ],
  ])('encodes %j', (v, want) => {
    expect(encodeSubnetEnv(v)).toBe(want);
  });

  it.each([
    { network: 'nope', subnet: '10.244.3.0/24', mtu: 1450, ipMasq: true },
    { network: '10.244.0.0/16', subnet: '10.244.3.0', mtu: 1450, ipMasq: true },
    { network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 0, ipMasq: true },
    { network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1450.5, ipMasq: true },
    { network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1450, ipMasq: true, ipv6Network: 'fd00::/48' },
    { network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1450, ipMasq: true, ipv6Network: '10.0.0.0/8', ipv6Subnet: 'fd00::/64' },
    // A zone is not part of a network (Go's net.ParseCIDR refuses it); a dotted IPv4 tail is not how
    // flannel writes IPv6 (its CIDRs are hex), and `::ffff:255.255.255.255/0` would be written unmasked.
    { network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1450, ipMasq: true, ipv6Network: 'fd00::/48', ipv6Subnet: 'fe80::1%eth0/64' },
    { network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1450, ipMasq: true, ipv6Network: '::ffff:255.255.255.255/0', ipv6Subnet: 'fd00::/64' },
    { network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1450, ipMasq: true, ipv6Network: 'fd00::/48', ipv6Subnet: '::ffff:10.0.0.0/120' },
  ])('rejects %j with FLANNEL_ERR_SUBNET_ENV', (v) => {
    expect(() => encodeSubnetEnv(v)).toThrow(expect.objectContaining({ code: 'FLANNEL_ERR_SUBNET_ENV' }));
  });
});

// The agent writes subnet.env again when its bytes for the network differ from those it last wrote.
describe('encodeSubnetEnv: the bytes change exactly when a value does (the agent rewrites subnet.env then)', () => {
  const written: SubnetEnvValues = { network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1450, ipMasq: true };
  const dual: SubnetEnvValues = { ...written, ipv6Network: 'fd00:10:244::/56', ipv6Subnet: 'fd00:10:244:3::/64' };
  it.each<[string, SubnetEnvValues | undefined, SubnetEnvValues, boolean]>([
    ['not written yet', undefined, written, true],
    ['the same values', written, { ...written }, false],
    ['a rebuild changed the MTU', written, { ...written, mtu: 1350 }, true],
    ['a new lease has another subnet', written, { ...written, subnet: '10.244.9.0/24' }, true],
    ['both changed', written, { ...written, subnet: '10.244.9.0/24', mtu: 1350 }, true],
    ['dual-stack, the same values', dual, { ...dual }, false],
    ['dual-stack, a new lease has only another IPv6 subnet', dual, { ...dual, ipv6Subnet: 'fd00:10:244:9::/64' }, true],
    ['dual-stack, a new lease has another IPv4 subnet', dual, { ...dual, subnet: '10.244.9.0/24' }, true],
  ])('%s', (_what, before, wanted, outdated) => {
    expect(before === undefined || encodeSubnetEnv(before) !== encodeSubnetEnv(wanted)).toBe(outdated);
  });
});

describe('parseSubnetEnv / previousSubnetFromEnv', () => {
  it('tolerates CRLF', () => {
    const text = 'FLANNEL_NETWORK=10.244.0.0/16\r\nFLANNEL_SUBNET=10.244.3.1/24\r\nFLANNEL_MTU=1450\r\nFLANNEL_IPMASQ=true\r\n';
    expect(parseSubnetEnv(text)).toEqual({
      FLANNEL_NETWORK: '10.244.0.0/16',
      FLANNEL_SUBNET: '10.244.3.1/24',
      FLANNEL_MTU: '1450',
      FLANNEL_IPMASQ: 'true',
    });
    expect(previousSubnetFromEnv(text)).toBe('10.244.3.0/24');
  });

  it.each([
    ['FLANNEL_SUBNET=10.244.3.1/24\n', '10.244.3.0/24'],
    ['FLANNEL_SUBNET=10.5.52.1/26\n', '10.5.52.0/26'],
    ['FLANNEL_NETWORK=10.244.0.0/16\n', undefined],
    ['FLANNEL_SUBNET=garbage\n', undefined],
    ['', undefined],
  ])('%j -> %s', (text, want) => expect(previousSubnetFromEnv(text)).toBe(want));
});

describe('writeSubnetEnv / readSubnetEnv', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'subnet-env-'));
  });
  afterEach(() => {
    chmodSync(dir, 0o755);
    rmSync(dir, { recursive: true, force: true });
  });

  const contents = encodeSubnetEnv({ network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1450, ipMasq: true });

  it('creates parent directories and writes the exact bytes', async () => {
    const path = join(dir, 'run', 'flannel', 'subnet.env');
    await writeSubnetEnv(path, contents);
    expect(readFileSync(path, 'utf8')).toBe(contents);
    expect(readdirSync(join(dir, 'run', 'flannel'))).toEqual(['subnet.env']);
    expect(await readSubnetEnv(path)).toBe(contents);
  });

  it('the default file system is frozen: a test injects a failing one as an option, never by patching it', () => {
    expect(Object.isFrozen(nodeSubnetEnvFs)).toBe(true);
  });

  it('replaces an existing file', async () => {
    const path = join(dir, 'subnet.env');
    writeFileSync(path, 'FLANNEL_SUBNET=10.244.9.1/24\n');
    await writeSubnetEnv(path, contents);
    expect(readFileSync(path, 'utf8')).toBe(contents);
    expect(readdirSync(dir)).toEqual(['subnet.env']);
  });

  const failing = (op: 'rename' | 'write' | 'mkdir', errno: string): SubnetEnvFs => {
    const fail = () => Promise.reject(Object.assign(new Error(`${errno}: simulated`), { code: errno }));
    return {
      ...nodeSubnetEnvFs,
      mkdir: op === 'mkdir' ? fail : (p, o) => nodeSubnetEnvFs.mkdir(p, o),
      rename: op === 'rename' ? fail : (a, b) => nodeSubnetEnvFs.rename(a, b),
      open: async (p, f, m) => {
        const fh = await nodeSubnetEnvFs.open(p, f, m);
        return op === 'write' ? { writeFile: fail, sync: () => fh.sync(), close: () => fh.close() } : fh;
      },
    };
  };

  it.each([
    ['rename', 'EROFS'],
    ['write', 'ENOSPC'],
    ['mkdir', 'EACCES'],
  ] as const)('%s failing with %s: code, path named, old file intact, no temp left', async (op, errno) => {
    const path = join(dir, 'subnet.env');
    writeFileSync(path, 'OLD=1\n');
    const err = await writeSubnetEnv(path, contents, { fs: failing(op, errno) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isFlannelError(err, 'FLANNEL_ERR_SUBNET_ENV')).toBe(true);
    expect((err as FlannelError).context.path).toBe(path);
    expect(readFileSync(path, 'utf8')).toBe('OLD=1\n');
    expect(readdirSync(dir)).toEqual(['subnet.env']);
  });

  const notRoot = typeof process.getuid === 'function' && process.getuid() !== 0;
  (notRoot ? it : it.skip)('real read-only directory: code, old file intact, no temp left', async () => {
    const path = join(dir, 'subnet.env');
    writeFileSync(path, 'OLD=1\n');
    chmodSync(dir, 0o555);
    await expect(writeSubnetEnv(path, contents)).rejects.toMatchObject({ code: 'FLANNEL_ERR_SUBNET_ENV' });
    expect(readFileSync(path, 'utf8')).toBe('OLD=1\n');
    expect(readdirSync(dir)).toEqual(['subnet.env']);
  });

  it('parent path is a file: FLANNEL_ERR_SUBNET_ENV', async () => {
    writeFileSync(join(dir, 'file'), 'x');
    await expect(writeSubnetEnv(join(dir, 'file', 'subnet.env'), contents)).rejects.toMatchObject({ code: 'FLANNEL_ERR_SUBNET_ENV' });
  });

  it('read: missing -> undefined, directory -> code, malformed -> code', async () => {
    expect(await readSubnetEnv(join(dir, 'missing.env'))).toBeUndefined();
    mkdirSync(join(dir, 'adir'));
    await expect(readSubnetEnv(join(dir, 'adir'))).rejects.toMatchObject({ code: 'FLANNEL_ERR_SUBNET_ENV' });
    writeFileSync(join(dir, 'bad.env'), 'FLANNEL_SUBNET=10.244.3.1/24\nthis is not env\n');
    await expect(readSubnetEnv(join(dir, 'bad.env'))).rejects.toMatchObject({ code: 'FLANNEL_ERR_SUBNET_ENV' });
    writeFileSync(join(dir, 'bin.env'), Buffer.from([0x46, 0, 0x3d, 0x31]));
    await expect(readSubnetEnv(join(dir, 'bin.env'))).rejects.toMatchObject({ code: 'FLANNEL_ERR_SUBNET_ENV' });
    writeFileSync(join(dir, 'bom.env'), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('FLANNEL_SUBNET=10.244.7.1/24\r\n')]));
    expect(previousSubnetFromEnv((await readSubnetEnv(join(dir, 'bom.env')))!)).toBe('10.244.7.0/24');
    writeFileSync(join(dir, 'crlf.env'), '# written by hand\r\nFLANNEL_SUBNET=10.244.3.1/24\r\n');
    expect(previousSubnetFromEnv((await readSubnetEnv(join(dir, 'crlf.env')))!)).toBe('10.244.3.0/24');
  });
});

// On Windows a rename over a file another process holds open without FILE_SHARE_DELETE fails (libuv maps
// ERROR_ACCESS_DENIED / ERROR_SHARING_VIOLATION to EPERM/EACCES/EBUSY); upstream writes in place instead
// (flannel pkg/subnet/subnetfile_windows.go, citing renameio's README). We retry the rename, boundedly.
describe('writeSubnetEnv: rename over a file in use', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'subnet-env-busy-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const contents = encodeSubnetEnv({ network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1450, ipMasq: true });

  /** node:fs with a rename that fails with `errno` for the first `times` calls (Infinity: always). */
  const busyRename = (errno: string, times: number): SubnetEnvFs & { renames: number } => {
    const fs = {
      ...nodeSubnetEnvFs,
      renames: 0,
      rename: (a: string, b: string) => {
        fs.renames++;
        if (fs.renames <= times) return Promise.reject(Object.assign(new Error(`${errno}: simulated`), { code: errno }));
        return nodeSubnetEnvFs.rename(a, b);
      },
    };
    return fs;
  };

  it.each(['EPERM', 'EACCES', 'EBUSY'])('%s twice, then free: written after two backoff pauses on the clock', async (errno) => {
    const path = join(dir, 'subnet.env');
    writeFileSync(path, 'OLD=1\n');
    const clock = new FakeClock({ instant: true });
    const fs = busyRename(errno, 2);
    await writeSubnetEnv(path, contents, { fs, clock });
    expect(readFileSync(path, 'utf8')).toBe(contents);
    expect(fs.renames).toBe(3);
    expect(clock.sleeps).toEqual([SUBNET_ENV_RENAME_RETRY.backoffBaseMs, SUBNET_ENV_RENAME_RETRY.backoffBaseMs * 2]);
    expect(readdirSync(dir)).toEqual(['subnet.env']);
  });

  it('in use for good: FLANNEL_ERR_SUBNET_ENV after the bound, old file intact, no temp left', async () => {
    const path = join(dir, 'subnet.env');
    writeFileSync(path, 'OLD=1\n');
    const clock = new FakeClock({ instant: true });
    const start = clock.now();
    const fs = busyRename('EPERM', Infinity);
    const err = await expectCode(writeSubnetEnv(path, contents, { fs, clock }), SubnetEnvError, 'FLANNEL_ERR_SUBNET_ENV');
    expect(err.context).toMatchObject({ path, stage: 'rename', errno: 'EPERM', attempts: fs.renames });
    expect(fs.renames).toBeGreaterThan(3);
    const waited = clock.now() - start;
    expect(waited).toBeGreaterThanOrEqual(SUBNET_ENV_RENAME_RETRY.timeoutMs);
    expect(waited).toBeLessThanOrEqual(SUBNET_ENV_RENAME_RETRY.timeoutMs + SUBNET_ENV_RENAME_RETRY.backoffCapMs);
    expect(readFileSync(path, 'utf8')).toBe('OLD=1\n');
    expect(readdirSync(dir)).toEqual(['subnet.env']);
  });

  it('a rename failure that is not "in use" (EXDEV) is not retried', async () => {
    const path = join(dir, 'subnet.env');
    const clock = new FakeClock({ instant: true });
    const fs = busyRename('EXDEV', Infinity);
    await expectCode(writeSubnetEnv(path, contents, { fs, clock }), SubnetEnvError, 'FLANNEL_ERR_SUBNET_ENV');
    expect(fs.renames).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });
});
