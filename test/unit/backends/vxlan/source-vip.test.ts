// kube-proxy source VIP: address choice, the file formats the scripts read, and the reservation on the
// simulated HNS (endpoint, host-local reservation, files; idempotent; a taken address is skipped).
import { describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  SOURCE_VIP_OWNER,
  chooseSourceVip,
  kubeProxySourceVip,
  parseSourceVipDocument,
  plainSourceVipDocument,
  reserveSourceVip,
  sdnSourceVipDocument,
  sourceVipEndpointName,
} from '../../../../src/backends/vxlan/source-vip.js';
import { overlayNetworkFor } from '../../../../src/backends/vxlan/backend.js';
import { hostFiles } from '../../../../src/basics/fs.js';
import { hnsMacOf } from '../../../../src/host/win32-host.js';
import { HnsClient } from '../../../../src/hns/client.js';
import { SimulatedHnsTransport } from '../../../../src/simulator/hns.js';
import { SimulatedDataplane } from '../../../../src/simulator/model.js';
import { silentLogger } from '../../../../src/basics/log.js';
import { parseNetConf } from '../../../../src/subnet/net-conf.js';
import { nodeIP } from '../../../support/sim-dataplane.js';
import { logSink } from '../../../support/log-sink.js';

describe('chooseSourceVip', () => {
  it.each<[string, string[], string[], string | undefined]>([
    ['fresh node: .2', [], [], '10.244.1.2'],
    ['recorded address wins', ['10.244.1.7'], [], '10.244.1.7'],
    ['recorded but taken: .2', ['10.244.1.7'], ['10.244.1.7'], '10.244.1.2'],
    ['recorded outside the subnet is ignored', ['10.244.9.7'], [], '10.244.1.2'],
    ['the gateway is never chosen', ['10.244.1.1'], [], '10.244.1.2'],
    ['.2 taken: lowest free', [], ['10.244.1.2', '10.244.1.3'], '10.244.1.4'],
  ])('%s', (_n, preferred, taken, want) => {
    expect(chooseSourceVip('10.244.1.0/24', preferred, new Set(taken))).toBe(want);
  });

  it('a full subnet has none', () => {
    expect(chooseSourceVip('10.244.1.0/30', [], new Set(['10.244.1.2']))).toBeUndefined();
  });
});

describe('documents', () => {
  // The two readers, as the scripts write them:
  //  microsoft/SDN Kubernetes/windows/helper.psm1 GetSourceVip and sig-windows-tools
  //  hostprocess/flannel/kube-proxy/start.ps1 (host-local CNI 0.2.0 output): $sourceVipJSONData.ip4.ip.Split("/")[0]
  //  scripts that run host-local with cniVersion 0.3.1 (e.g. a Calico node's GetSourceVip): .ips[0].address.Split("/")[0]
  const sdnReader = (text: string) => (JSON.parse(text) as { ip4: { ip: string } }).ip4.ip.split('/')[0];
  const cni03Reader = (text: string) => (JSON.parse(text) as { ips: { address: string }[] }).ips[0].address.split('/')[0];

  it('the script format is one object holding host-local CNI 0.2.0 (ip4) and 0.3.0 (ips) output; both readers get the address', () => {
    const text = JSON.stringify(sdnSourceVipDocument({ ip: '10.244.1.2', prefixLength: 24, gateway: '10.244.1.1' }));
    expect(text).toBe(
      '{"cniVersion":"0.2.0","ip4":{"ip":"10.244.1.2/24","gateway":"10.244.1.1"},"ips":[{"version":"4","address":"10.244.1.2/24","gateway":"10.244.1.1"}],"dns":{}}',
    );
    expect(sdnReader(text)).toBe('10.244.1.2');
    expect(cni03Reader(text)).toBe('10.244.1.2');
    const plain = JSON.stringify(
      plainSourceVipDocument({ ip: '10.244.1.2', prefixLength: 24, gateway: '10.244.1.1', subnet: '10.244.1.0/24', network: 'flannel.4096', endpointId: 'E' }),
    );
    expect([sdnReader(plain), cni03Reader(plain), parseSourceVipDocument(plain)]).toEqual(['10.244.1.2', '10.244.1.2', '10.244.1.2']);
  });

  it.each([
    // golden: host-local's output for the scripts' requests (cniVersion 0.2.0 and 0.3.0)
    ['{"cniVersion":"0.2.0","ip4":{"ip":"10.244.1.9/24","gateway":"10.244.1.1"},"dns":{}}', '10.244.1.9'],
    ['{"cniVersion":"0.3.0","ips":[{"version":"4","address":"10.244.1.9/24","gateway":"10.244.1.1"}],"dns":{}}', '10.244.1.9'],
  ])('reads what the scripts stored: %s', (text, want) => {
    expect(parseSourceVipDocument(text)).toBe(want);
  });

  it.each([
    ['{"ip":"10.244.1.2"}', '10.244.1.2'],
    ['{"cniVersion":"0.2.0","ip4":{"ip":"10.244.1.3/24"}}', '10.244.1.3'],
    ['{"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.244.1.4/24"}]}', '10.244.1.4'],
    ['\uFEFF{"ip4":{"ip":"10.244.1.5/24"}}', '10.244.1.5'], // Out-File writes a BOM
    ['not json', undefined],
    ['{"ip":"nope"}', undefined],
  ])('parses %s', (text, want) => {
    expect(parseSourceVipDocument(text)).toBe(want);
  });

  it('hnsMacOf turns a Node MAC into HNS form', () => {
    expect(hnsMacOf('10.0.0.2', { Ethernet: [{ address: '10.0.0.2', family: 'IPv4', mac: '00:15:5d:0a:0b:0c' }] })).toBe('00-15-5D-0A-0B-0C');
    expect(hnsMacOf('10.0.0.3', { Ethernet: [{ address: '10.0.0.2', family: 'IPv4', mac: '00:15:5d:0a:0b:0c' }] })).toBeUndefined();
  });
});

describe("kube-proxy's endpoint, found by IP as winkernel hns.go getEndpointByIpAddress does", () => {
  const ep = (name: string | undefined, ip: string, flags = 0, second?: string) => ({
    ...(name !== undefined ? { Name: name } : {}),
    ID: `ID-${ip}`,
    Flags: flags,
    IpConfigurations: [{ IpAddress: ip }, ...(second ? [{ IpAddress: second }] : [])],
    SchemaVersion: { Major: 2, Minor: 0 },
  });
  it.each<[string, ReturnType<typeof ep>[], string[], string | undefined]>([
    ['nameless local endpoint', [ep('pod-a', '10.244.1.3'), ep(undefined, '10.244.1.9')], [], '10.244.1.9'],
    ['the one holding a recorded IP first', [ep(undefined, '10.244.1.5'), ep(undefined, '10.244.1.9')], ['10.244.1.9'], '10.244.1.9'],
    ['recorded IP on the second IP configuration', [ep(undefined, '10.244.1.5'), ep(undefined, '10.244.1.20', 0, '10.244.1.9')], ['10.244.1.9'], '10.244.1.20'],
    [
      'a named endpoint (a pod, or this agent) never, even at a recorded IP',
      [ep('pod-a', '10.244.1.9'), ep('flannel.4096_sourcevip', '10.244.1.2')],
      ['10.244.1.9', '10.244.1.2'],
      undefined,
    ],
    ['a remote endpoint (kube-proxy service VIP) never', [ep(undefined, '10.244.1.9', 1)], ['10.244.1.9'], undefined],
    ['outside the subnet never', [ep(undefined, '10.96.0.10')], [], undefined],
    ['named pods only: none', [ep('pod-a', '10.244.1.3')], [], undefined],
  ])('%s', (_what, endpoints, recorded, want) => {
    expect(endpointIPOf(kubeProxySourceVip(endpoints, '10.244.1.0/24', recorded))).toBe(want);
  });
});

const endpointIPOf = (e: { IpConfigurations?: { IpAddress: string }[] } | undefined) => e?.IpConfigurations?.[0]?.IpAddress;

describe('reserveSourceVip on the simulated HNS', () => {
  const netConf = parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096}}');
  const subnet = '10.244.1.0/24';

  async function setup() {
    const dir = mkdtempSync(join(tmpdir(), 'source-vip-'));
    const sim = new SimulatedDataplane();
    const hns = new HnsClient(new SimulatedHnsTransport(sim));
    if (netConf.backend.type !== 'vxlan') throw new Error('vxlan');
    await hns.createNetwork(overlayNetworkFor(netConf.backend, subnet, 'Ethernet'));
    const opts = {
      hns,
      networkName: 'flannel.4096',
      subnet,
      file: join(dir, 'run', 'sourcevip.json'),
      compatFiles: [join(dir, 'k', 'sourceVip.json'), join(dir, 'sourcevip', 'sourceVip.json')],
      ipamDataDir: join(dir, 'cni'),
      log: silentLogger(),
      fs: hostFiles,
    };
    // HNS restarted: the non-persistent Overlay network and every endpoint are gone; the agent recreates the network.
    const restartHns = async () => {
      sim.restartHns();
      if (netConf.backend.type === 'vxlan') await hns.createNetwork(overlayNetworkFor(netConf.backend, subnet, 'Ethernet'));
    };
    return { dir, sim, hns, opts, restartHns, done: () => rmSync(dir, { recursive: true, force: true }) };
  }

  it('creates the endpoint at .2, reserves it in host-local, writes both formats; a second run changes nothing', async () => {
    const t = await setup();
    try {
      const rec = await reserveSourceVip(t.opts);
      expect(rec).toMatchObject({ ip: '10.244.1.2', prefixLength: 24, network: 'flannel.4096' });
      const eps = t.sim.listEndpoints().filter((e) => e.Name === sourceVipEndpointName('flannel.4096'));
      expect(eps).toHaveLength(1);
      expect(eps[0].IpConfigurations).toEqual([{ IpAddress: '10.244.1.2', PrefixLength: 24 }]);
      expect(eps[0].Policies).toEqual([{ Type: 'ProviderAddress', Settings: { ProviderAddress: nodeIP(t.sim) } }]);
      expect(readFileSync(join(t.dir, 'cni', 'flannel.4096', '10.244.1.2'), 'utf8')).toBe(`${SOURCE_VIP_OWNER}\r\nsourcevip`);
      const plain = JSON.parse(readFileSync(t.opts.file, 'utf8')) as unknown;
      expect(plain).toMatchObject({ ip: '10.244.1.2', prefixLength: 24, ip4: { ip: '10.244.1.2/24' }, endpointId: eps[0].ID });
      for (const f of t.opts.compatFiles) expect((JSON.parse(readFileSync(f, 'utf8')) as { ip4: { ip: string } }).ip4.ip.split('/')[0]).toBe('10.244.1.2');

      const creates = t.sim.calls.get('HcnCreateEndpoint') ?? 0;
      const again = await reserveSourceVip(t.opts);
      expect(again).toEqual(rec);
      expect(t.sim.calls.get('HcnCreateEndpoint') ?? 0).toBe(creates);
    } finally {
      t.done();
    }
  });

  it('skips an address a pod holds (endpoint) or host-local gave to a container, keeps a script reservation', async () => {
    const t = await setup();
    try {
      const net = t.sim.getNetworkByName('flannel.4096')!;
      t.sim.createEndpoint('test', net.ID!, { Name: 'pod-a', IpConfigurations: [{ IpAddress: '10.244.1.2', PrefixLength: 24 }], SchemaVersion: { Major: 2, Minor: 0 } });
      mkdirSync(join(t.dir, 'cni', 'flannel.4096'), { recursive: true });
      writeFileSync(join(t.dir, 'cni', 'flannel.4096', '10.244.1.3'), 'containerid-b\r\neth0');
      expect((await reserveSourceVip(t.opts)).ip).toBe('10.244.1.4');
    } finally {
      t.done();
    }
  });

  it('an address the SDN scripts reserved (sourceVip.json + host-local "dummy") is taken over', async () => {
    const t = await setup();
    try {
      mkdirSync(join(t.dir, 'k'), { recursive: true });
      writeFileSync(t.opts.compatFiles[0], '{"cniVersion":"0.2.0","ip4":{"ip":"10.244.1.9/24","gateway":"10.244.1.1"},"dns":{}}');
      mkdirSync(join(t.dir, 'cni', 'flannel.4096'), { recursive: true });
      writeFileSync(join(t.dir, 'cni', 'flannel.4096', '10.244.1.9'), 'dummy\r\ndummy');
      expect((await reserveSourceVip(t.opts)).ip).toBe('10.244.1.9');
      // The script's reservation file is left as it was (still reserving the same address).
      expect(readFileSync(join(t.dir, 'cni', 'flannel.4096', '10.244.1.9'), 'utf8')).toBe('dummy\r\ndummy');
    } finally {
      t.done();
    }
  });

  it('after an HNS restart, a recorded source VIP whose reservation a pod holds is taken: another is chosen, with a warning', async () => {
    const t = await setup();
    const sink = logSink();
    try {
      const first = await reserveSourceVip(t.opts);
      expect(first.ip).toBe('10.244.1.2');
      // HNS restarted (every endpoint gone) and, say, an admin cleared the store: a pod got .2 from host-local.
      await t.restartHns();
      const path = join(t.dir, 'cni', 'flannel.4096', '10.244.1.2');
      writeFileSync(path, '3f1c9a0b2d4e\r\neth0');
      const rec = await reserveSourceVip({ ...t.opts, log: sink.log });
      expect(rec.ip).toBe('10.244.1.3');
      expect(readFileSync(path, 'utf8')).toBe('3f1c9a0b2d4e\r\neth0');
      expect(JSON.parse(readFileSync(t.opts.file, 'utf8'))).toMatchObject({ ip: '10.244.1.3' });
      expect(sink.entries.filter((l) => l['level'] === 'warn')).toEqual([expect.objectContaining({ ip: '10.244.1.2', container: '3f1c9a0b2d4e', path })]);
    } finally {
      t.done();
    }
  });

  it("a torn reservation of the recorded source VIP (empty file) is nobody's: the address is kept and the file rewritten", async () => {
    const t = await setup();
    try {
      await reserveSourceVip(t.opts);
      await t.restartHns();
      const path = join(t.dir, 'cni', 'flannel.4096', '10.244.1.2');
      writeFileSync(path, '');
      expect((await reserveSourceVip(t.opts)).ip).toBe('10.244.1.2');
      expect(readFileSync(path, 'utf8')).toBe(`${SOURCE_VIP_OWNER}\r\nsourcevip`);
    } finally {
      t.done();
    }
  });

  it("kube-proxy's nameless endpoint at the recorded address is adopted; the agent's own duplicate goes; nothing is created", async () => {
    const t = await setup();
    try {
      const first = await reserveSourceVip(t.opts); // the agent's own, at .2
      const net = t.sim.getNetworkByName('flannel.4096')!;
      const kp = t.sim.createEndpoint('HcnCreateEndpoint', net.ID!, { IpConfigurations: [{ IpAddress: '10.244.1.9' }], SchemaVersion: { Major: 2, Minor: 0 } });
      writeFileSync(t.opts.compatFiles[1], '{"cniVersion":"0.3.0","ips":[{"version":"4","address":"10.244.1.9/24","gateway":"10.244.1.1"}],"dns":{}}');
      const creates = t.sim.calls.get('HcnCreateEndpoint') ?? 0;
      const rec = await reserveSourceVip(t.opts);
      expect(rec).toMatchObject({ ip: '10.244.1.9', endpointId: kp.ID });
      expect(t.sim.listEndpoints().map((e) => e.ID)).toEqual([kp.ID]);
      expect(t.sim.listEndpoints().some((e) => e.ID === first.endpointId)).toBe(false);
      expect(t.sim.calls.get('HcnCreateEndpoint') ?? 0).toBe(creates);
      for (const f of [t.opts.file, ...t.opts.compatFiles]) expect(parseSourceVipDocument(readFileSync(f, 'utf8'))).toBe('10.244.1.9');
    } finally {
      t.done();
    }
  });
});
