// kube-proxy already owns the source VIP: a node set up by the familiar scripts (sig-windows-tools'
// kube-proxy start.ps1 reserved 10.244.7.9 with host-local, CNI 0.3.0, and kube-proxy created its
// nameless endpoint for it, as winkernel proxier.go newSourceVIP does). The built CLI must adopt it.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { overlayNetworkFor } from '../../src/backends/vxlan/backend.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import { VXLAN_NET_CONF, TestCluster } from '../support/cluster.js';
import { PROFILES } from '../support/hns-profiles.js';

const WIN = 'win-1';
let cluster: TestCluster;
beforeEach(async () => {
  cluster = await (await new TestCluster().start()).withNodes({ name: WIN, internalIP: '10.0.0.2' });
});
afterEach(() => cluster.stop());

// On each HNS profile (../support/hns-profiles.ts): the source VIP is an HCN v2 endpoint (hcsshim
// hcn/hcnglobals.go V2ApiVersion, 9.2) on the Overlay network of the RemoteSubnetRoute policies
// (RemoteSubnetVersion, 9.2), which every profile has; the node's state file names the version.
describe.each(PROFILES)('kube-proxy already owns the source VIP, on $os (HNS $hns)', ({ hns }) => {
  it('its nameless endpoint is adopted by IP: no second VIP; files and reservation name its address', async () => {
    const state = cluster.stateOf(WIN);
    const dir = join(cluster.dir, WIN);
    const scriptFile = join(dir, 'sourcevip', 'sourceVip.json');
    const ipamDir = join(dir, 'cni');
    // What the node looks like after upstream flanneld, the kube-proxy script and kube-proxy ran:
    const cfg = parseNetConf(JSON.stringify(VXLAN_NET_CONF)).backend;
    if (cfg.type !== 'vxlan') throw new Error('vxlan');
    const model = state.model();
    const net = model.createNetwork('HcnCreateNetwork', overlayNetworkFor(cfg, '10.244.7.0/24', 'Ethernet'));
    const kubeProxy = model.createEndpoint('HcnCreateEndpoint', net.ID!, {
      IpConfigurations: [{ IpAddress: '10.244.7.9' }],
      MacAddress: '00-15-5D-00-00-02',
      Flags: 0,
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    state.edit((s) => void (s.hnsVersion = hns));
    mkdirSync(join(dir, 'sourcevip'), { recursive: true });
    // host-local's CNI 0.3.0 output, as start.ps1 (`"cniVersion": "0.3.0"`) stores it; read with .ips[0].address
    writeFileSync(scriptFile, '{"cniVersion":"0.3.0","ips":[{"version":"4","address":"10.244.7.9/24","gateway":"10.244.7.1"}],"dns":{}}\r\n');
    mkdirSync(join(ipamDir, 'flannel.4096'), { recursive: true });
    writeFileSync(join(ipamDir, 'flannel.4096', '10.244.7.9'), 'dummy\r\ndummy');

    const agent = await cluster.startProcess({
      nodeName: WIN,
      netConf: VXLAN_NET_CONF,
      args: [`--source-vip-file=${join(dir, 'run', 'sourcevip.json')}`, `--source-vip-compat-files=${scriptFile}`, `--cni-ipam-data-dir=${ipamDir}`],
    });
    await agent.waitReady();
    const log = await agent.waitForLog("adopting kube-proxy's source VIP endpoint");
    expect(log).toMatchObject({ id: kubeProxy.ID, ip: '10.244.7.9' });

    const local = state.read().endpoints.filter((e) => ((e.Flags ?? 0) & 1) === 0);
    expect(local.map((e) => e.IpConfigurations?.[0]?.IpAddress)).toEqual(['10.244.7.9']);
    expect(local[0].ID).toBe(kubeProxy.ID);
    for (const f of [scriptFile, join(dir, 'run', 'sourcevip.json')]) {
      const doc = JSON.parse(readFileSync(f, 'utf8')) as { ip4: { ip: string }; ips: { address: string }[] };
      expect(doc.ip4.ip.split('/')[0]).toBe('10.244.7.9'); // microsoft/SDN helper.psm1 GetSourceVip
      expect(doc.ips[0].address.split('/')[0]).toBe('10.244.7.9'); // sig-windows-tools kube-proxy start.ps1
    }
    expect(JSON.parse(readFileSync(join(dir, 'run', 'sourcevip.json'), 'utf8'))).toMatchObject({ ip: '10.244.7.9', endpointId: kubeProxy.ID });
    expect(readFileSync(join(ipamDir, 'flannel.4096', '10.244.7.9'), 'utf8')).toBe('dummy\r\ndummy');
  });
});
