// doctor's checks (src/commands/doctor-checks.ts) are pure over the facts: a healthy vxlan and host-gw node
// pass; each change below breaks one hop and exactly that row fails. The staged nodes on the simulated
// dataplane are in test/integration/doctor.test.ts; this table covers the edges without one.
import { describe, expect, it } from '@jest/globals';
import { MAX_LISTED, exitCodeOf, leakedReservations, runChecks, type DoctorFacts } from '../../../src/commands/doctor-checks.js';
import { join } from 'node:path';
import * as nodeFs from 'node:fs';
import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { freeReservations, reservationsToFree, renderDoctorTable } from '../../../src/commands/doctor.js';
import type { StatusReport } from '../../../src/health/status.js';
import type { NetpolStatus } from '../../../src/policy/controller.js';

const MAC = '00-15-5D-AA-BB-CC';

function vxlanFacts(): DoctorFacts {
  return {
    netConf: { type: 'vxlan', name: 'flannel.4096', network: '10.244.0.0/16', vni: 4096, port: 4789 },
    subnetFile: '/run/flannel/subnet.env',
    subnetEnv: { FLANNEL_NETWORK: '10.244.0.0/16', FLANNEL_SUBNET: '10.244.7.1/24', FLANNEL_MTU: '1450', FLANNEL_IPMASQ: 'true' },
    lease: { subnet: '10.244.7.0/24', publicIP: '10.0.0.2', from: 'Node win' },
    networks: [{ id: 'N1', name: 'flannel.4096', type: 'Overlay', subnet: '10.244.7.0/24', subnets: ['10.244.7.0/24'], vsid: 4096, adapter: 'Ethernet', drMac: MAC }],
    endpoints: [
      { id: 'E1', name: 'flannel.4096_sourcevip', ips: ['10.244.7.2'], remote: false },
      { id: 'E2', name: 'pod-a', ips: ['10.244.7.3'], remote: false },
    ],
    publishedVtepMac: '00:15:5d:aa:bb:cc',
    sourceVipFiles: [{ path: '/run/flannel/sourcevip.json', ip: '10.244.7.2' }],
    peers: {
      nodes: [
        {
          lease: { key: 'linux-1', subnet: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: '0e:2a:0a:00:00:0b' } },
          os: 'linux',
        },
      ],
      actual: [{ prefix: '10.244.1.0/24', via: '10.0.0.11', vni: 4096, mac: '0e:2a:0a:00:00:0b' }],
      refused: undefined,
    },
    cni: {
      confDir: '/etc/cni/net.d',
      binDir: '/opt/cni/bin',
      first: {
        file: '/etc/cni/net.d/10-flannel.conflist',
        others: '',
        conf: { name: 'flannel.4096' },
        plugins: [
          {
            type: 'flannel',
            subnetFile: '/run/flannel/subnet.env',
            dataDir: '/var/lib/cni/flannel',
            delegate: {
              type: 'win-overlay',
              loopbackDSR: true,
              policies: [{ name: 'EndpointPolicy', value: { Type: 'OutBoundNAT', Settings: { Exceptions: ['10.244.0.0/16', '10.96.0.0/12'] } } }],
            },
          } as never,
        ],
      },
      readiness: [],
      expected: { dataDir: '/var/lib/cni/flannel', natExceptions: ['10.244.0.0/16', '10.96.0.0/12'] },
      pins: { pinned: true, files: { 'flannel.exe': 'aa' } },
      hashes: { 'flannel.exe': 'aa' },
    },
    interfaces: [{ name: 'vEthernet (Ethernet)', index: 7, ipv4: '10.0.0.2', prefixLength: 24, mtu: 1500 }],
    annotatedPublicIP: '10.0.0.2',
    ipam: {
      dir: '/var/lib/cni/networks/flannel.4096',
      reservations: [
        { ip: '10.244.7.2', file: '10.244.7.2', owner: 'flanneld-source-vip', ageMs: 1e6 },
        { ip: '10.244.7.3', file: '10.244.7.3', owner: 'abc', ageMs: 1e6 },
      ],
    },
    loadBalancers: [],
    servicePorts: undefined,
    podIPs: undefined,
    cluster: { error: '', networkUnavailable: { status: 'False', reason: 'FlannelIsUp' } },
    agent: { error: 'connect ECONNREFUSED', files: [] },
    graceMs: 600_000,
  };
}

function hostGwFacts(): DoctorFacts {
  const f = vxlanFacts();
  return {
    ...f,
    netConf: { type: 'host-gw', name: 'cbr0', network: '10.244.0.0/16', vni: 0, port: 0 },
    subnetEnv: { ...(f.subnetEnv as Record<string, string>), FLANNEL_MTU: '1500' },
    networks: [{ id: 'N1', name: 'cbr0', type: 'L2Bridge', subnet: '10.244.7.0/24', subnets: ['10.244.7.0/24'], adapter: 'Ethernet' }],
    endpoints: [{ id: 'E1', name: 'cbr0_ep', ips: ['10.244.7.2'], remote: false }],
    publishedVtepMac: undefined,
    sourceVipFiles: [],
    peers: {
      nodes: [{ lease: { key: 'linux-1', subnet: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw', backendData: null } }],
      actual: [{ prefix: '10.244.1.0/24', via: '10.0.0.11' }],
      refused: undefined,
    },
    cni: { ...f.cni, first: { ...(f.cni.first as Extract<DoctorFacts['cni']['first'], { file: string }>), conf: { name: 'cbr0' } } },
    ipam: { dir: '/var/lib/cni/networks/cbr0', reservations: [{ ip: '10.244.7.2', file: '10.244.7.2', owner: 'flanneld-host-endpoint', ageMs: 1 }] },
  };
}

/**
 * A dual-stack host-gw node: its conflist is sdnbridge's (src/cni/conflist.ts renderDualStackCniConfig), with
 * an OutBoundNAT policy per family in AdditionalArgs, as recorded in test/fixtures/cni-traces/sdnbridge-dual-stack-add.json.
 */
function dualStackFacts(): DoctorFacts {
  const f = hostGwFacts();
  const nat = (exceptions: string[]) => ({ Name: 'EndpointPolicy', Value: { Type: 'OutBoundNAT', Settings: { Exceptions: exceptions } } });
  return {
    ...f,
    netConf: { type: 'host-gw', name: 'cbr0', network: '10.244.0.0/16', vni: 0, port: 0, ipv6Network: 'fd00:10:244::/56' },
    subnetEnv: { ...(f.subnetEnv as Record<string, string>), FLANNEL_IPV6_NETWORK: 'fd00:10:244::/56', FLANNEL_IPV6_SUBNET: 'fd00:10:244:7::1/64' },
    lease: { subnet: '10.244.7.0/24', publicIP: '10.0.0.2', ipv6Subnet: 'fd00:10:244:7::/64', from: 'Node win' },
    networks: [{ id: 'N1', name: 'cbr0', type: 'L2Bridge', subnet: '10.244.7.0/24', subnets: ['10.244.7.0/24', 'fd00:10:244:7::/64'], adapter: 'Ethernet' }],
    endpoints: [{ id: 'E1', name: 'cbr0_ep', ips: ['10.244.7.2', 'fd00:10:244:7::2'], remote: false }],
    cni: {
      ...f.cni,
      first: {
        file: '/etc/cni/net.d/10-flannel.conflist',
        others: '',
        conf: { name: 'cbr0' },
        plugins: [
          {
            type: 'sdnbridge',
            optionalFlags: { localRoutedPortMapping: true, allowAclPortMapping: true, enableDualStack: true, loopbackDSR: true },
            ipam: { type: 'host-local' },
            // IPv6 spelled as an operator may write it: doctor compares the prefixes, not the text.
            AdditionalArgs: [nat(['10.244.0.0/16', '10.96.0.0/12', '10.0.0.0/24']), nat(['fd00:10:244:0::/56', 'fd00:10:96::/112', 'fd00:10:0:0::/64'])],
          } as never,
        ],
      },
      expected: { dataDir: '/var/lib/cni/flannel', natExceptions: ['10.244.0.0/16', '10.96.0.0/12', '10.0.0.0/24', 'fd00:10:244::/56', 'fd00:10:96::/112', 'fd00:10::/64'] },
      pins: undefined,
      hashes: {},
    },
    ipam: {
      dir: '/var/lib/cni/networks/cbr0',
      // The agent reserves only the IPv4 `.2`; the conflist's IPv6 range starts at `::3`.
      reservations: [{ ip: '10.244.7.2', file: '10.244.7.2', owner: 'flanneld-host-endpoint', ageMs: 1 }],
    },
  };
}

const sdnbridgeArgs = (f: DoctorFacts) =>
  (f.cni.first as unknown as { plugins: { AdditionalArgs: { Value: { Settings: { Exceptions: string[] } } }[] }[] }).plugins[0].AdditionalArgs;

/** The agent runs, in sync, with --network-policy: x/a selected by x/allow-b, its rules on its endpoint E2. */
function withNetpol(f: DoctorFacts, np: Partial<NetpolStatus> | undefined): StatusReport {
  const status: StatusReport = {
    version: '1',
    phase: 'running',
    ready: true,
    inSync: true,
    cni: null,
    startKind: null,
    lease: { subnet: '10.244.7.0/24', publicIP: '10.0.0.2' },
    network: { name: 'flannel.4096', present: true, type: 'Overlay', id: 'N1', adapter: 'Ethernet' },
    mtu: 1450,
    sourceVip: '10.244.7.2',
    peers: { desired: 1, programmed: 1, rejected: 0, rejections: [], refused: 0, refusals: [] },
    lastPass: { at: '2025-01-01T00:10:00Z', ok: true },
    lastSuccess: '2025-01-01T00:10:00Z',
    lastError: null,
    ...(np === undefined
      ? {}
      : {
          networkPolicy: {
            inSync: true,
            listed: true,
            policies: 1,
            refused: [],
            pods: [{ pod: 'x/a', ips: ['10.244.7.3'], endpoint: 'E2', policies: ['x/allow-b'], rules: 3, programmed: true }],
            endpointsWithoutRules: [],
            hnsRefused: 0,
            ...np,
          },
        }),
  };
  f.agent = { files: [], status };
  return status;
}

const failed = (f: DoctorFacts) =>
  runChecks(f)
    .filter((r) => r.status === 'fail')
    .map((r) => r.id);

describe('runChecks', () => {
  it.each([
    ['vxlan', vxlanFacts],
    ['host-gw', hostGwFacts],
  ])('passes a healthy %s node, and says what kube-proxy needs', (_name, facts) => {
    const rows = runChecks(facts());
    expect(rows.filter((r) => r.status !== 'ok').map((r) => `${r.id} ${r.status}`)).toEqual(['agent warn', 'network-policy skip']);
    expect(exitCodeOf(rows)).toBe(0);
    expect(rows.find((r) => r.id === 'kube-proxy')?.saw).toContain('--network-name=');
  });

  const CASES: [string, () => DoctorFacts, (f: DoctorFacts) => void][] = [
    ['net-conf', vxlanFacts, (f) => void (f.netConf = { error: 'bad JSON' })],
    ['lease', vxlanFacts, (f) => void (f.lease = undefined)],
    ['hns-network', vxlanFacts, (f) => void (f.networks = { error: 'HNS is down' })],
    ['hns-subnet', vxlanFacts, (f) => void ((f.networks as { vsid?: number }[])[0].vsid = 1)],
    ['vtep-mac', vxlanFacts, (f) => void ((f.networks as { drMac?: string }[])[0].drMac = undefined)],
    ['host-endpoint', hostGwFacts, (f) => void (f.endpoints = [])],
    ['host-endpoint', hostGwFacts, (f) => void (f.endpoints = [{ name: 'cbr0_ep', ips: ['10.244.7.9'], remote: false }])],
    ['peers', hostGwFacts, (f) => void (f.peers.actual = [])],
    ['peers', hostGwFacts, (f) => void (f.peers.actual = [{ prefix: '10.244.1.0/24', via: '10.0.0.99' }])],
    ['peers', vxlanFacts, (f) => void (f.peers.refused = [{ node: 'linux-1', prefix: '10.244.1.0/24', hresult: '0x803B002F', error: 'x', since: '', attempts: 3 }])],
    ['subnet-env', vxlanFacts, (f) => void (f.subnetEnv = undefined)],
    ['subnet-env', vxlanFacts, (f) => void (f.subnetEnv = { ...(f.subnetEnv as Record<string, string>), FLANNEL_NETWORK: '10.0.0.0/8' })],
    ['cni-conflist', vxlanFacts, (f) => void (f.cni.first = { check: 'cni-conf-invalid', detail: 'x', fix: 'y' })],
    ['ipam-gateway', hostGwFacts, (f) => void (f.ipam.reservations = [])],
    ['ipam-leaks', vxlanFacts, (f) => void (f.ipam.reservations = { error: 'EACCES' })],
    ['node-condition', vxlanFacts, (f) => void (f.cluster.networkUnavailable = { status: 'True', reason: 'NoRouteCreated' })],
    ['cluster-vni', vxlanFacts, (f) => void (f.cluster.linuxNetConf = { port: 8472, vni: 4096, type: 'vxlan', from: 'kube-flannel/kube-flannel-cfg' })],
    // A VXLAN port other than 4789 on HNS below 10.3 (hcsshim VxlanPortVersion): the agent refuses it.
    [
      'hns-version',
      vxlanFacts,
      (f) =>
        void ((f.netConf = { ...(f.netConf as { type: 'vxlan'; name: string; network: string; vni: number; port: number }), port: 8472 }), (f.hnsVersion = { Major: 9, Minor: 3 })),
    ],
    ['mtu', hostGwFacts, (f) => void (f.subnetEnv = { ...(f.subnetEnv as Record<string, string>), FLANNEL_MTU: '1450' })],
    // Dual-stack: sdnbridge's OutBoundNAT exceptions are judged for both families, as the flannel plugin's are.
    ['cni-outbound-nat', dualStackFacts, (f) => void sdnbridgeArgs(f).splice(1, 1)],
    ['cni-outbound-nat', dualStackFacts, (f) => void (sdnbridgeArgs(f)[1].Value.Settings.Exceptions = ['fd00:10:244::/56'])],
    ['cni-outbound-nat', dualStackFacts, (f) => void (sdnbridgeArgs(f)[0].Value.Settings.Exceptions = ['10.244.0.0/16', '10.96.0.0/12'])],
    ['network-policy', vxlanFacts, (f) => void withNetpol(f, { inSync: false, endpointsWithoutRules: ['x/a'] })],
  ];

  it.each(CASES)('%s fails, and only it (case %#)', (id, facts, breakIt) => {
    const f = facts();
    breakIt(f);
    // net-conf and HNS being unreadable stop the rows after them; every other row still says what it saw.
    expect(failed(f)).toEqual([id]);
  });

  it("judges a dual-stack node's sdnbridge conflist: the NAT exceptions of both families, optionalFlags.loopbackDSR; it has no dataDir", () => {
    const rows = runChecks(dualStackFacts());
    expect(rows.filter((r) => r.status !== 'ok').map((r) => `${r.id} ${r.status}`)).toEqual(['agent warn', 'cni-data-dir skip', 'cni-pins skip', 'network-policy skip']);
    const off = dualStackFacts();
    (off.cni.first as unknown as { plugins: { optionalFlags: { loopbackDSR: boolean } }[] }).plugins[0].optionalFlags.loopbackDSR = false;
    expect(runChecks(off).find((r) => r.id === 'cni-loopback-dsr')?.status).toBe('warn');
    const nat = rows.find((r) => r.id === 'cni-outbound-nat')!;
    expect(nat.saw).toContain('fd00:10:96::/112');
    const f = dualStackFacts();
    sdnbridgeArgs(f).splice(1, 1);
    const broken = runChecks(f).find((r) => r.id === 'cni-outbound-nat')!;
    expect(broken.saw).toContain('lack fd00:10:244::/56, fd00:10:96::/112, fd00:10::/64');
    expect(broken.fix).toContain('--ipv6-service-cidr');
  });

  // The agent reserves its gateway for the podCIDR it runs (src/backends/hostgw/backend.ts settle: `.2`; vxlan:
  // the source VIP); one left from an earlier podCIDR (the Node re-created with another) is not it.
  it("ipam-gateway looks for the current podCIDR's address, past a stale reservation from an earlier podCIDR", () => {
    const stale = { ip: '10.244.6.2', file: '10.244.6.2', owner: 'flanneld-host-endpoint', ageMs: 1e7 };
    const hostGw = hostGwFacts();
    hostGw.ipam.reservations = [stale, ...(hostGw.ipam.reservations as never[])];
    expect(failed(hostGw)).toEqual([]);
    expect(runChecks(hostGw).find((r) => r.id === 'ipam-gateway')?.saw).toContain('10.244.7.2 is reserved');
    // Only the stale one: failed, naming the current address.
    hostGw.ipam.reservations = [stale];
    expect(failed(hostGw)).toEqual(['ipam-gateway']);
    expect(runChecks(hostGw).find((r) => r.id === 'ipam-gateway')?.saw).toContain('10.244.7.2');

    const vxlan = vxlanFacts();
    const staleVip = { ip: '10.244.6.2', file: '10.244.6.2', owner: 'flanneld-source-vip', ageMs: 1e7 };
    vxlan.ipam.reservations = [staleVip, ...(vxlan.ipam.reservations as never[])];
    expect(failed(vxlan)).toEqual([]);
    vxlan.ipam.reservations = [staleVip, { ip: '10.244.7.3', file: '10.244.7.3', owner: 'abc', ageMs: 1e6 }];
    expect(failed(vxlan)).toEqual(['ipam-gateway']);
    expect(runChecks(vxlan).find((r) => r.id === 'ipam-gateway')?.saw).toContain('no reservation of the source VIP in 10.244.7.0/24');
  });

  it('ipam-gateway on a dual-stack node: the IPv4 .2 reserved, and no pod holds the IPv6 ::2 gateway', () => {
    const f = dualStackFacts();
    f.ipam.reservations = [{ ip: 'fd00:10:244:6::2', file: 'fd00_10_244_6__2', owner: 'flanneld-host-endpoint', ageMs: 1e7 }, ...(f.ipam.reservations as never[])];
    expect(failed(f)).toEqual([]);
    expect(runChecks(f).find((r) => r.id === 'ipam-gateway')?.saw).toContain('fd00:10:244:7::2');
    // host-local gave the IPv6 gateway to a pod (a conflist whose IPv6 range starts at ::2): its default route points at itself.
    f.ipam.reservations = [
      { ip: '10.244.7.2', file: '10.244.7.2', owner: 'flanneld-host-endpoint', ageMs: 1 },
      { ip: 'fd00:10:244:7::2', file: 'fd00_10_244_7__2', owner: 'c0ffee', ageMs: 1 },
    ];
    f.endpoints = [...(f.endpoints as never[]), { id: 'E2', name: 'c0ffee_cbr0', ips: ['10.244.7.9', 'fd00:10:244:7::2'], remote: false }];
    expect(failed(f)).toEqual(['ipam-gateway']);
    expect(runChecks(f).find((r) => r.id === 'ipam-gateway')?.saw).toContain('fd00:10:244:7::2 is held by c0ffee');
  });

  it('shows the HNS version and what it enables; a VXLAN port other than 4789 is fine from 10.3 and names the inbound UDP port', () => {
    const f = vxlanFacts();
    f.netConf = { ...(f.netConf as { type: 'vxlan'; name: string; network: string; vni: number; port: number }), port: 8472 };
    f.hnsVersion = { Major: 13, Minor: 2 };
    const rows = runChecks(f);
    expect(failed(f)).toEqual([]);
    const hns = rows.find((r) => r.id === 'hns-version')!;
    expect(hns.status).toBe('ok');
    expect(hns.saw).toContain('HNS 13.2');
    expect(hns.saw).toContain('VxlanPort');
    expect(rows.find((r) => r.id === 'net-conf')!.saw).toContain('inbound UDP 8472');
    const refused = runChecks({ ...f, hnsVersion: { Major: 9, Minor: 3 } }).find((r) => r.id === 'hns-version')!;
    expect(refused.saw).toContain('10.3');
  });

  it('warns (does not fail) on what degrades a node without breaking a hop', () => {
    const f = vxlanFacts();
    (f.networks as { adapter?: string }[])[0].adapter = undefined;
    const first = f.cni.first as { plugins: { dataDir?: string; delegate?: { loopbackDSR?: boolean } }[] };
    first.plugins[0].dataDir = undefined;
    first.plugins[0].delegate!.loopbackDSR = false;
    f.netConf = { ...(f.netConf as { type: 'vxlan'; name: string; network: string; vni: number; port: number }), vni: 1 };
    (f.networks as { vsid?: number }[])[0].vsid = 1;
    f.peers.nodes = [];
    f.peers.actual = [];
    const rows = runChecks(f);
    expect(rows.filter((r) => r.status === 'fail')).toEqual([]);
    expect(rows.filter((r) => r.status === 'warn').map((r) => r.id)).toEqual(['agent', 'net-conf', 'hns-adapter', 'cni-data-dir', 'cni-loopback-dsr']);
    expect(exitCodeOf(rows)).toBe(0);
  });

  it("settles a contested subnet as the agent's peer store does: the older Node's policy is expected, the younger Node is named", () => {
    const f = vxlanFacts();
    const older = f.peers.nodes![0];
    older.lease.created = 1_000;
    f.peers.nodes!.push({ lease: { ...older.lease, key: 'linux-2', publicIP: '10.0.0.12', created: 2_000 }, os: 'linux' });
    const row = runChecks(f).find((r) => r.id === 'peers')!;
    expect(row.status).toBe('ok');
    expect(row.saw).toContain('linux-2 (subnet-overlaps-peer)');
    // Swap the times: now linux-2 holds the subnet, and the policy to linux-1 is stale.
    f.peers.nodes![1].lease.created = 500;
    expect(runChecks(f).find((r) => r.id === 'peers')!.saw).toContain('stale for linux-2 10.244.1.0/24 via 10.0.0.11, published 10.0.0.12');
  });

  it('names at most MAX_LISTED peers in a row, and how many more', () => {
    const f = vxlanFacts();
    f.peers.nodes = Array.from({ length: MAX_LISTED + 5 }, (_, i) => ({
      lease: { key: `n${i}`, subnet: `10.244.${100 + i}.0/24`, publicIP: `10.0.1.${i + 1}`, backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: '0e:2a:0a:00:01:01' } },
    }));
    f.peers.actual = [];
    const row = runChecks(f).find((r) => r.id === 'peers')!;
    expect(row.saw).toContain(`n${MAX_LISTED - 1} 10.244.${100 + MAX_LISTED - 1}.0/24, and 5 more`);
    expect(row.saw).not.toContain(`n${MAX_LISTED} `);
  });

  it('says why a running agent is not in sync now: never an error a later pass fixed', () => {
    const f = vxlanFacts();
    f.agent = {
      files: [],
      status: {
        version: '1',
        phase: 'running',
        ready: true,
        inSync: false,
        cni: null,
        startKind: null,
        lease: { subnet: '10.244.7.0/24', publicIP: '10.0.0.2' },
        network: { name: 'flannel.4096', present: true, type: 'Overlay', id: 'N1', adapter: 'Ethernet' },
        mtu: 1450,
        sourceVip: '10.244.7.2',
        peers: { desired: 1, programmed: 1, rejected: 0, rejections: [], refused: 0, refusals: [] },
        lastPass: { at: '2025-01-01T00:10:00Z', ok: true },
        lastSuccess: '2025-01-01T00:10:00Z',
        lastError: { at: '2025-01-01T00:01:00Z', message: 'HNS HcnQueryNetworkProperties failed with HRESULT 0x80070005' },
        ownNode: { state: 'deleted', reason: 'the own Node "win" was deleted from the API server' },
      },
    };
    const rows = runChecks(f);
    const agent = rows.find((r) => r.id === 'agent')!;
    expect(agent.saw).toContain('its Node is deleted from the API server');
    expect(agent.saw).not.toContain('0x80070005');
    expect(rows.find((r) => r.id === 'node-condition')).toMatchObject({ status: 'fail', fix: 'restart the kubelet on this node: it registers the Node again' });
    // The last pass failed: that error is now, and is quoted.
    f.agent.status!.lastPass = { at: '2025-01-01T00:11:00Z', ok: false };
    expect(runChecks(f).find((r) => r.id === 'agent')!.saw).toContain('its last pass failed: HNS HcnQueryNetworkProperties');
  });

  it('an APIPA address on the vSwitch adapter names it', () => {
    const f = vxlanFacts();
    f.interfaces = [{ name: 'vEthernet (Ethernet)', index: 7, ipv4: '169.254.3.4', prefixLength: 16, mtu: 1500 }];
    const row = runChecks(f).find((r) => r.id === 'adapter-ip')!;
    expect(row.status).toBe('fail');
    expect(row.saw).toContain('APIPA address 169.254.3.4');
  });
});

describe('--fix', () => {
  it('frees only leaked pod reservations past the grace period: never the gateway, .2 on host-gw or the source VIP', () => {
    const f = vxlanFacts();
    f.endpoints = [];
    f.ipam.reservations = [
      { ip: '10.244.7.1', file: '10.244.7.1', owner: 'x', ageMs: 1e9 },
      { ip: '10.244.7.2', file: '10.244.7.2', owner: 'someone', ageMs: 1e9 },
      { ip: '10.244.7.4', file: '10.244.7.4', owner: 'old-pod', ageMs: 1e9 },
      { ip: '10.244.7.5', file: '10.244.7.5', owner: 'new-pod', ageMs: 10 },
    ];
    expect(leakedReservations(f).map((r) => r.ip)).toEqual(['10.244.7.2', '10.244.7.4', '10.244.7.5']);
    expect(reservationsToFree(f, 600_000).map((r) => r.ip)).toEqual(['10.244.7.4']);
    const g = hostGwFacts();
    g.endpoints = [];
    g.ipam.reservations = [
      { ip: '10.244.7.2', file: '10.244.7.2', owner: 'pod', ageMs: 1e9 },
      { ip: '10.244.7.9', file: '10.244.7.9', owner: 'pod', ageMs: 1e9 },
    ];
    expect(reservationsToFree(g, 0).map((r) => r.ip)).toEqual(['10.244.7.9']);
  });

  it('keeps a reservation rewritten since it was read (another pod got the address), frees the rest', () => {
    const f = vxlanFacts();
    f.endpoints = [];
    f.ipam.dir = mkdtempSync(join(tmpdir(), 'doctor-ipam-'));
    f.ipam.reservations = [
      { ip: '10.244.7.4', file: '10.244.7.4', owner: 'old-pod', ageMs: 1e9 },
      { ip: '10.244.7.5', file: '10.244.7.5', owner: 'old-pod', ageMs: 1e9 },
    ];
    // On disk now: .4 as it was read, .5 rewritten for another pod since.
    writeFileSync(join(f.ipam.dir, '10.244.7.4'), 'old-pod\r\neth0');
    writeFileSync(join(f.ipam.dir, '10.244.7.5'), 'new-pod\r\neth0');
    utimesSync(join(f.ipam.dir, '10.244.7.4'), 1, 1);
    try {
      expect(freeReservations(f, 600_000, nodeFs, Date.now()).map((x) => x.ip)).toEqual(['10.244.7.4']);
      expect(readdirSync(f.ipam.dir)).toEqual(['10.244.7.5']);
    } finally {
      rmSync(f.ipam.dir, { recursive: true, force: true });
    }
  });

  it('frees nothing, and names no leak, while the endpoints are unknown (HNS would not list them)', () => {
    const f = hostGwFacts();
    f.endpoints = { error: 'HNS HcnEnumerateEndpoints failed with HRESULT 0x80070005' };
    f.ipam.reservations = [{ ip: '10.244.7.9', file: '10.244.7.9', owner: 'pod', ageMs: 1e9 }];
    expect(leakedReservations(f)).toEqual([]);
    expect(reservationsToFree(f, 0)).toEqual([]);
    const rows = runChecks(f);
    expect(rows.find((r) => r.id === 'host-endpoint')?.saw).toMatch(/^could not read the endpoints on cbr0/);
    expect(rows.find((r) => r.id === 'ipam-leaks')?.status).toBe('skip');
  });

  it('frees nothing without the HNS network (every reservation would look leaked)', () => {
    const f = vxlanFacts();
    f.networks = [];
    f.ipam.reservations = [{ ip: '10.244.7.4', file: '10.244.7.4', owner: 'pod', ageMs: 1e9 }];
    expect(reservationsToFree(f, 0)).toEqual([]);
  });
});

describe('renderDoctorTable', () => {
  it('escapes what it prints and names the failed rows', () => {
    const f = vxlanFacts();
    f.networks = [{ name: 'evil\u001b[31m', type: 'NAT', subnets: [] }];
    const table = renderDoctorTable(runChecks(f));
    expect(table).not.toContain('\u001b');
    expect(table).toMatch(/^FAIL {2}hns-network +no HNS network flannel\.4096/m);
    expect(table).toMatch(/check\(s\) failed: hns-network\n$/);
  });
});

describe("the network-policy row (the agent's /status, src/policy/controller.ts NetpolStatus)", () => {
  const row = (f: DoctorFacts) => runChecks(f).find((r) => r.id === 'network-policy');

  it('is skipped when no agent answers, or it runs without --network-policy', () => {
    const f = vxlanFacts();
    expect(row(f)).toMatchObject({ status: 'skip', saw: expect.stringContaining('flanneld is not answering') });
    withNetpol(f, undefined);
    expect(row(f)).toMatchObject({ status: 'skip', saw: expect.stringContaining('without --network-policy') });
  });

  it('passes when the controller is in sync and every selected pod holds its rules', () => {
    const f = vxlanFacts();
    withNetpol(f, {});
    expect(row(f)).toMatchObject({ status: 'ok', saw: '1 NetworkPolicies; 1 local pods selected, each holding its rules (3 rules)' });
  });

  it('fails while the lists are incomplete, naming the RBAC the controller needs', () => {
    const f = vxlanFacts();
    withNetpol(f, { inSync: false, listed: false, pods: [] });
    const r = row(f)!;
    expect(r.status).toBe('fail');
    expect(r.saw).toContain('has not listed Pods, Namespaces and NetworkPolicies');
    expect(r.fix).toContain('kubectl auth can-i watch networkpolicies --all-namespaces --as=system:serviceaccount:kube-flannel:flannel-windows');
  });

  it('fails for a local pod whose address no endpoint holds: recreate it', () => {
    const f = vxlanFacts();
    withNetpol(f, { inSync: false, endpointsWithoutRules: ['x/a'], pods: [{ pod: 'x/a', ips: ['10.244.7.9'], policies: ['x/allow-b'], rules: 0, programmed: false }] });
    const r = row(f)!;
    expect(r.status).toBe('fail');
    expect(r.saw).toContain('x/a (10.244.7.9): no HNS endpoint of network flannel.4096 holds its address');
    expect(r.fix).toContain('kubectl delete pod -n x a');
  });

  it('fails for an endpoint HNS refuses rules on, naming the count and where to read its answer', () => {
    const f = vxlanFacts();
    withNetpol(f, {
      inSync: false,
      hnsRefused: 2,
      endpointsWithoutRules: ['x/a'],
      pods: [{ pod: 'x/a', ips: ['10.244.7.3'], endpoint: 'E2', policies: ['x/allow-b'], rules: 3, programmed: false }],
    });
    const r = row(f)!;
    expect(r.status).toBe('fail');
    expect(r.saw).toContain('x/a (endpoint E2): lacks some of its 3 rules; HNS refused 2 rules or IP sets');
    expect(r.fix).toContain('HNS refused a NetworkPolicy rule or IP set');
    expect(r.fix).toContain('kubectl delete pod -n x a');
  });

  it('warns for a refused policy: its pods allow nothing it meant to allow', () => {
    const f = vxlanFacts();
    withNetpol(f, { refused: [{ namespace: 'x', name: 'sctp', uid: 'u', reason: 'Unsupported', message: 'an SCTP port: HNS ACLs cannot match SCTP' }] });
    expect(row(f)).toMatchObject({
      status: 'warn',
      saw: expect.stringContaining('refused: x/sctp (Unsupported: an SCTP port'),
      fix: expect.stringContaining('kubectl describe networkpolicy -n x sctp'),
    });
  });
});
