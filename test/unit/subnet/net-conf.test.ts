import { describe, it, expect } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkNetworkExcludesNode, MIN_NETWORK_PREFIX, MIXED_CLUSTER_HINT, parseNetConf, readNetConf } from '../../../src/subnet/net-conf.js';
import { FlannelError, NetConfError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';

const VX = { Type: 'vxlan' };
const conf = (o: Record<string, unknown>): string => JSON.stringify(o);

function errorOf(fn: () => unknown): FlannelError {
  try {
    fn();
  } catch (err) {
    if (err instanceof FlannelError) return err;
    throw err;
  }
  throw new Error('expected an error');
}

describe('parseNetConf: defaults', () => {
  it('mixed-cluster ConfigMap', () => {
    const nc = parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
    expect(nc).toEqual({
      enableIPv4: true,
      enableIPv6: false,
      network: '10.244.0.0/16',
      subnetLen: 24,
      subnetMin: '10.244.1.0',
      subnetMax: '10.244.255.0',
      ipv6Network: '',
      ipv6SubnetLen: 0,
      backend: { type: 'vxlan', vni: 4096, port: 4789, macPrefix: '0E-2A', name: 'flannel.4096', legacyRemoteEndpoints: false },
      rawBackend: { Type: 'vxlan', VNI: 4096, Port: 4789 },
    });
  });

  it.each([
    ['10.244.0.0/16', 24, '10.244.1.0', '10.244.255.0'],
    ['10.0.0.0/8', 24, '10.0.1.0', '10.255.255.0'],
    ['10.244.0.0/22', 24, '10.244.1.0', '10.244.3.0'],
    ['10.244.0.0/23', 25, '10.244.0.128', '10.244.1.128'],
    ['10.244.0.0/26', 28, '10.244.0.16', '10.244.0.48'],
    ['10.244.0.0/28', 30, '10.244.0.4', '10.244.0.12'],
  ])('Network %s -> SubnetLen %i, SubnetMin %s, SubnetMax %s', (network, len, min, max) => {
    expect(parseNetConf(conf({ Network: network, Backend: VX }))).toMatchObject({ network, subnetLen: len, subnetMin: min, subnetMax: max });
  });

  it.each([
    ['10.244.1.0/16', '10.244.0.0/16'],
    ['10.244.77.9/20', '10.244.64.0/20'],
    ['192.168.3.3/24', '192.168.3.0/24'],
  ])('Network %s is masked to %s', (given, masked) => {
    expect(parseNetConf(conf({ Network: given, Backend: VX })).network).toBe(masked);
  });

  it('explicit SubnetLen/Min/Max are kept', () => {
    const nc = parseNetConf(conf({ Network: '10.5.0.0/16', SubnetLen: 26, SubnetMin: '10.5.4.0', SubnetMax: '10.5.8.64', Backend: VX }));
    expect(nc).toMatchObject({ subnetLen: 26, subnetMin: '10.5.4.0', subnetMax: '10.5.8.64' });
  });

  it('SubnetMin 0.0.0.0 means not set (as upstream)', () => {
    expect(parseNetConf(conf({ Network: '10.5.0.0/16', SubnetMin: '0.0.0.0', Backend: VX })).subnetMin).toBe('10.5.1.0');
  });

  it('vxlan backend options', () => {
    const nc = parseNetConf(
      conf({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 5000, MacPrefix: '0A-BC', Name: 'vxlan0', GBP: false, DirectRouting: false, LegacyRemoteEndpoints: true } }),
    );
    expect(nc.backend).toEqual({ type: 'vxlan', vni: 5000, port: 4789, macPrefix: '0A-BC', name: 'vxlan0', legacyRemoteEndpoints: true });
  });

  it('a VXLAN port other than 4789 is kept (HNS takes it as a VxlanPort network policy from 10.3)', () => {
    expect(parseNetConf(conf({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 8472 } })).backend).toMatchObject({ port: 8472 });
    expect(parseNetConf(conf({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', Port: 65535 } })).backend).toMatchObject({ port: 65535 });
  });

  it('VNI 65535 is the highest Windows takes (RemoteSubnetRoute IsolationId is a uint16)', () => {
    expect(parseNetConf(conf({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 65535 } })).backend).toMatchObject({ vni: 65535, name: 'flannel.65535' });
  });

  it('vxlan Name defaults to flannel.<VNI>', () => {
    expect(parseNetConf(conf({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4097, Name: '' } })).backend).toMatchObject({ name: 'flannel.4097' });
  });

  it.each([
    [{ Type: 'host-gw' }, { type: 'host-gw', name: 'cbr0', dnsServerList: '' }],
    [
      { Type: 'host-gw', Name: 'l2br', DNSServerList: '10.96.0.10,8.8.8.8' },
      { type: 'host-gw', name: 'l2br', dnsServerList: '10.96.0.10,8.8.8.8' },
    ],
  ])('host-gw %j', (backend, expected) => {
    expect(parseNetConf(conf({ Network: '10.5.0.0/16', Backend: backend })).backend).toEqual(expected);
  });

  it('unknown keys are ignored at every level', () => {
    const nc = parseNetConf(conf({ Network: '10.5.0.0/16', Whatever: [1], Backend: { Type: 'host-gw', Extra: { a: 1 } } }));
    expect(nc.backend.type).toBe('host-gw');
  });

  it('IPv6 dual stack', () => {
    const nc = parseNetConf(conf({ Network: '10.5.0.0/16', EnableIPv6: true, IPv6Network: 'fd00:12:13::5/48', Backend: VX }));
    expect(nc).toMatchObject({ enableIPv6: true, ipv6Network: 'fd00:12:13::/48', ipv6SubnetLen: 64 });
  });
});

describe('parseNetConf: case-insensitive keys', () => {
  it.each([
    ['lower case', '{"network":"10.7.0.0/16","subnetlen":25,"backend":{"type":"VXLAN","vni":4100,"port":4789,"macprefix":"0e-2b","name":"v","legacyremoteendpoints":true}}'],
    ['upper case', '{"NETWORK":"10.7.0.0/16","SUBNETLEN":25,"BACKEND":{"TYPE":"Vxlan","VNI":4100,"PORT":4789,"MACPREFIX":"0e-2b","NAME":"v","LEGACYREMOTEENDPOINTS":true}}'],
  ])('%s', (_label, json) => {
    const nc = parseNetConf(json);
    expect(nc).toMatchObject({ network: '10.7.0.0/16', subnetLen: 25 });
    expect(nc.backend).toEqual({ type: 'vxlan', vni: 4100, port: 4789, macPrefix: '0e-2b', name: 'v', legacyRemoteEndpoints: true });
  });

  it.each([
    ['{"network":"10.7.0.0/16","enableipv4":true,"backend":{"TYPE":"HOST-GW","dnsserverlist":"1.1.1.1","NAME":"x"}}', { type: 'host-gw', name: 'x', dnsServerList: '1.1.1.1' }],
    ['{"Network":"10.7.0.0/16","Backend":{"Type":"vxlan","gbp":false,"directrouting":false}}', { type: 'vxlan', vni: 4096 }],
  ])('%s', (json, backend) => {
    expect(parseNetConf(json).backend).toMatchObject(backend);
  });

  it('subnetmin/subnetmax/ipv6 keys', () => {
    const nc = parseNetConf(
      '{"network":"10.7.0.0/16","subnetmin":"10.7.2.0","subnetmax":"10.7.9.0","enableipv6":true,"ipv6network":"fd00::/56","ipv6subnetlen":60,"backend":{"type":"vxlan"}}',
    );
    expect(nc).toMatchObject({ subnetMin: '10.7.2.0', subnetMax: '10.7.9.0', enableIPv6: true, ipv6Network: 'fd00::/56', ipv6SubnetLen: 60 });
  });
});

describe('parseNetConf: errors', () => {
  // Upstream texts, asserted byte for byte.
  it.each([
    [{ Network: '10.0.0.0/29', Backend: VX }, 'network is too small. Minimum useful network prefix is /28'],
    [{ Network: '10.0.0.0/16', SubnetLen: 31, Backend: VX }, 'SubnetLen must be less than /31'],
    [{ Network: '10.0.0.0/16', SubnetLen: 17, Backend: VX }, 'network must be able to accommodate at least four subnets'],
    [{ Network: '10.0.0.0/16', SubnetMin: '10.1.0.0', Backend: VX }, 'SubnetMin is not in the range of the Network'],
    [{ Network: '10.0.0.0/16', SubnetMax: '11.0.0.0', Backend: VX }, 'SubnetMax is not in the range of the Network'],
    [{ Network: '10.0.0.0/16', SubnetMin: '10.0.1.5', Backend: VX }, 'SubnetMin is not on a SubnetLen boundary: 10.0.1.5'],
    [{ Network: '10.0.0.0/16', SubnetMax: '10.0.9.128', Backend: VX }, 'SubnetMax is not on a SubnetLen boundary: 10.0.9.128'],
    [{ Backend: VX }, 'please define a correct Network parameter in the flannel config'],
    [{ Network: '10.0.0.0/16', Backend: { Type: 'vxlan', VNI: 1 } }, 'invalid VXLAN backend config. VNI [1] must be greater than or equal to 4096 on Windows' + MIXED_CLUSTER_HINT],
    [
      { Network: '10.0.0.0/16', Backend: { Type: 'vxlan', VNI: 4095 } },
      'invalid VXLAN backend config. VNI [4095] must be greater than or equal to 4096 on Windows' + MIXED_CLUSTER_HINT,
    ],
    [
      { Network: '10.0.0.0/16', Backend: { Type: 'vxlan', VNI: 65536 } },
      'invalid VXLAN backend config. VNI [65536] must be at most 65535 on Windows: HNS and kube-proxy carry it as a 16-bit IsolationId; choose a VNI from 4096 to 65535 for every node of the cluster',
    ],
    [
      { Network: '10.0.0.0/16', Backend: { Type: 'vxlan', Port: 0 } },
      'invalid VXLAN backend config. Port [0] must be a UDP port from 1 to 65535 (hcsshim VxlanPortPolicySetting Port uint16); omit the setting to default to port 4789',
    ],
    [
      { Network: '10.0.0.0/16', Backend: { Type: 'vxlan', Port: 65536 } },
      'invalid VXLAN backend config. Port [65536] must be a UDP port from 1 to 65535 (hcsshim VxlanPortPolicySetting Port uint16); omit the setting to default to port 4789',
    ],
    [{ Network: '10.0.0.0/16', Backend: { Type: 'vxlan', DirectRouting: true } }, 'invalid VXLAN backend config. DirectRouting is not supported on Windows'],
    [{ Network: '10.0.0.0/16', Backend: { Type: 'vxlan', GBP: true } }, 'invalid VXLAN backend config. GBP is not supported on Windows'],
    [
      { Network: '10.0.0.0/16', Backend: { Type: 'vxlan', MacPrefix: '0E:2A' } },
      'invalid VXLAN backend config.MacPrefix [0E:2A] is invalid, prefix must be of the format xx-xx e.g. 0E-2A',
    ],
    [
      { Network: '10.0.0.0/16', Backend: { Type: 'vxlan', MacPrefix: 'ZZ-2A' } },
      'invalid VXLAN backend config.MacPrefix [ZZ-2A] is invalid, prefix must be of the format xx-xx e.g. 0E-2A',
    ],
    [{ Network: '10.0.0.0/16', EnableIPv6: true, Backend: VX }, 'please define a correct IPv6Network parameter in the flannel config'],
    [{ Network: '10.0.0.0/16', EnableIPv6: true, IPv6Network: 'fd00::/125', Backend: VX }, 'IPv6Network is too small. Minimum useful network prefix is /124'],
    [{ Network: '10.0.0.0/16', EnableIPv6: true, IPv6Network: 'fd00::/64', IPv6SubnetLen: 127, Backend: VX }, 'SubnetLen must be less than /127'],
    [{ Network: 'not-a-cidr', Backend: VX }, 'invalid CIDR address: not-a-cidr'],
  ])('%j -> %s', (input, message) => {
    const err = errorOf(() => parseNetConf(conf(input)));
    expect(err.code).toBe('FLANNEL_ERR_NET_CONF');
    expect(err.message).toBe(message);
  });

  it.each(['udp', 'wireguard', 'ipip', 'alloc', 'extension', 'UDP', 'ipsec'])('backend type %s is not supported on Windows', (type) => {
    const err = expectCode(() => parseNetConf(conf({ Network: '10.0.0.0/16', Backend: { Type: type } })), NetConfError, 'FLANNEL_ERR_NET_CONF');
    expect(err.context).toEqual({ backendType: type });
  });

  // Our own texts: assert the code and the facts (context) they name.
  it.each([
    ['invalid JSON', '{"Network": "10.0.0.0/16",', { key: '$', reason: 'syntax' }],
    ['not an object', '[1,2]', { key: '$', reason: 'type' }],
    ['missing Backend', conf({ Network: '10.0.0.0/16' }), { key: 'Backend' }],
    ['Backend without Type', conf({ Network: '10.0.0.0/16', Backend: {} }), { key: 'Backend.Type' }],
    ['Backend null', conf({ Network: '10.0.0.0/16', Backend: null }), { key: 'Backend.Type' }],
    ['Backend not an object', conf({ Network: '10.0.0.0/16', Backend: 'vxlan' }), { key: 'Backend' }],
    ['IPv6 Network', conf({ Network: 'fd00::/48', Backend: VX }), { key: 'Network' }],
    ['IPv4 disabled, no IPv6', conf({ EnableIPv4: false, Backend: VX }), { key: 'EnableIPv4' }],
    ['SubnetLen as string', conf({ Network: '10.0.0.0/16', SubnetLen: '24', Backend: VX }), { key: 'SubnetLen' }],
    ['SubnetLen negative', conf({ Network: '10.0.0.0/16', SubnetLen: -1, Backend: VX }), { key: 'SubnetLen' }],
    ['VNI as string', conf({ Network: '10.0.0.0/16', Backend: { Type: 'vxlan', VNI: '4096' } }), { key: 'Backend.VNI' }],
    ['GBP as string', conf({ Network: '10.0.0.0/16', Backend: { Type: 'vxlan', GBP: 'false' } }), { key: 'Backend.GBP' }],
    ['SubnetMin not an IP', conf({ Network: '10.0.0.0/16', SubnetMin: 'x', Backend: VX }), { key: 'SubnetMin' }],
    ['VNI too large', conf({ Network: '10.0.0.0/16', Backend: { Type: 'vxlan', VNI: 16777216 } }), { vni: 16777216 }],
  ])('%s', (_label, json, context) => {
    const err = expectCode(() => parseNetConf(json), NetConfError, 'FLANNEL_ERR_NET_CONF');
    expect(err.context).toEqual(context);
  });
});

describe('readNetConf', () => {
  const good = '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}';
  const readFile = (p: string): string => {
    if (p === 'C:\\etc\\kube-flannel\\net-conf.json') return good;
    if (p === '/bad.json') return '{"Backend":{"Type":"udp"}}';
    if (p === '/denied.json') throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
  };

  it('reads and parses', () => {
    expect(readNetConf('C:\\etc\\kube-flannel\\net-conf.json', readFile).backend).toEqual({ type: 'host-gw', name: 'cbr0', dnsServerList: '' });
  });

  it.each([
    ['/missing.json', { path: '/missing.json' }, 'ENOENT'],
    ['/denied.json', { path: '/denied.json' }, 'EACCES'],
    ['/bad.json', { path: '/bad.json', backendType: 'udp' }, 'FLANNEL_ERR_NET_CONF'],
  ])('%s', (path, context, errno) => {
    const err = expectCode(() => readNetConf(path, readFile), NetConfError, 'FLANNEL_ERR_NET_CONF');
    expect(err.context).toEqual(context);
    expect((err.cause as { code?: string }).code).toBe(errno);
  });
});

// PowerShell 5's `Out-File -Encoding utf8` (and `Set-Content -Encoding utf8`) writes EF BB BF first; Node
// decodes it as U+FEFF, which JSON.parse rejects ("Unexpected token '\uFEFF'", an invisible character).
describe('readNetConf: a UTF-8 byte order mark', () => {
  it('net-conf.json written with a BOM (real bytes on disk) parses like one without', () => {
    const dir = mkdtempSync(join(tmpdir(), 'net-conf-bom-'));
    try {
      const path = join(dir, 'net-conf.json');
      writeFileSync(path, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{\r\n  "Network": "10.244.0.0/16",\r\n  "Backend": {"Type": "vxlan"}\r\n}\r\n')]));
      expect(readNetConf(path, (p) => readFileSync(p, 'utf8'))).toEqual(parseNetConf('{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('only one leading BOM is skipped: a second is still a syntax error', () => {
    const err = expectCode(() => parseNetConf('\uFEFF\uFEFF{"Network": "10.244.0.0/16"}'), NetConfError, 'FLANNEL_ERR_NET_CONF');
    expect(err.context).toMatchObject({ reason: 'syntax' });
  });
});

// Upstream's CheckNetworkConfig takes 0.0.0.0/0 (every peer then falls "inside" the network); we refuse
// anything wider than /8 (MIN_NETWORK_PREFIX, docs/compatibility.md §2).
describe('parseNetConf: a Network that cannot be right', () => {
  it.each(['0.0.0.0/0', '0.0.0.0/1', '8.0.0.0/7', '10.0.0.0/4'])('Network %s is too wide', (network) => {
    const err = expectCode(() => parseNetConf(conf({ Network: network, Backend: VX })), NetConfError, 'FLANNEL_ERR_NET_CONF');
    expect(err.context).toMatchObject({ key: 'Network', reason: 'too-wide' });
  });

  it.each(['10.0.0.0/8', '100.64.0.0/10', '10.244.0.0/16'])('Network %s is accepted', (network) => {
    expect(parseNetConf(conf({ Network: network, Backend: VX })).network).toBe(network);
    expect(MIN_NETWORK_PREFIX).toBe(8);
  });

  it.each([
    ['10.244.0.0/16', ['10.0.0.7', '10.0.0.7'], undefined],
    ['10.0.0.0/8', ['10.0.0.7', '10.0.0.7'], '10.0.0.7'],
    ['10.244.0.0/16', ['192.168.1.5', '10.244.9.9'], '10.244.9.9'], // --public-ip elsewhere, interface inside
    ['192.168.0.0/16', ['192.168.255.255', '10.0.0.7'], '192.168.255.255'],
    ['10.244.0.0/16', ['', '10.0.0.7'], undefined], // no public IP given
  ] as const)('Network %s vs node addresses %j -> %s', (network, addresses, covered) => {
    if (covered === undefined) {
      expect(() => checkNetworkExcludesNode(network, addresses)).not.toThrow();
      return;
    }
    const err = expectCode(() => checkNetworkExcludesNode(network, addresses), NetConfError, 'FLANNEL_ERR_NET_CONF');
    expect(err.context).toMatchObject({ key: 'Network', reason: 'covers-node-address', address: covered });
  });
});

describe('hostile net-conf', () => {
  it.each([
    ['../../x', 'vxlan'],
    ['..\\..\\x', 'host-gw'],
    ['a/b', 'host-gw'],
    ['a\\b', 'vxlan'],
    ['..', 'vxlan'],
    ['cbr0\u0000', 'host-gw'],
    ['flannel\n4096', 'vxlan'],
    ['cbr0\u202e0rbc', 'host-gw'], // the one escape (terminal-text.ts): bidi overrides, U+2028, C1
    ['cbr0\u2028', 'vxlan'],
    ['cbr0\u009b', 'vxlan'],
    ['x'.repeat(257), 'vxlan'],
    // Not a plain Windows path component (Microsoft Learn "Naming Files, Paths, and Namespaces"):
    // reserved device names (with or without an extension), reserved characters, a trailing dot or space.
    ['CON', 'host-gw'],
    ['nul', 'vxlan'],
    ['Aux.json', 'host-gw'],
    ['COM1', 'vxlan'],
    ['lpt9.net', 'host-gw'],
    ['com¹', 'vxlan'],
    ['cbr0.', 'host-gw'],
    ['cbr0 ', 'vxlan'],
    ['a:b', 'host-gw'],
    ['.', 'vxlan'],
    ['a*b', 'vxlan'],
    ['a?b', 'host-gw'],
    ['a"b', 'vxlan'],
    ['a<b>', 'host-gw'],
    ['a|b', 'vxlan'],
  ])('Backend.Name %j (%s) is refused: it names a host-local IPAM directory under --cni-ipam-data-dir', (name, type) => {
    const err = errorOf(() => parseNetConf(conf({ Network: '10.244.0.0/16', Backend: { Type: type, Name: name } })));
    expect(err.code).toBe('FLANNEL_ERR_NET_CONF');
    expect(err.context['key']).toBe('Backend.Name');
  });

  it.each(['cbr0', 'flannel.4096', 'vxlan0', 'x'.repeat(256), 'my net-1_a.b', 'console', 'COM10', 'nul0', 'CON-net', '.cbr0'])('Backend.Name %j is accepted', (name) => {
    expect(parseNetConf(conf({ Network: '10.244.0.0/16', Backend: { Type: 'vxlan', Name: name } })).backend.name).toBe(name);
  });

  const deep = '['.repeat(100_000) + ']'.repeat(100_000);
  it.each([
    ['the whole document', deep],
    ['an unterminated document', '['.repeat(100_000)],
    ['Network', `{"Network":${deep},"Backend":{"Type":"vxlan"}}`],
    ['Backend.Name', `{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","Name":${deep}}}`],
    ['an unknown Backend key', `{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","X":${deep}}}`],
  ])('100,000 nested [ in %s: a coded error naming the file, no stack overflow', (_what, text) => {
    const err = errorOf(() => readNetConf('/etc/kube-flannel/net-conf.json', () => text));
    expect(err.code).toBe('FLANNEL_ERR_NET_CONF');
    expect(err.context['path']).toBe('/etc/kube-flannel/net-conf.json');
  });
});
