// host-gw: the bridge endpoint's address in host-local's store. win-bridge takes `.2` of the pod subnet
// as every pod's gateway (containernetworking/plugins plugins/main/windows/win-bridge: the address of
// `cbr0_ep`), and host-local hands out `.2` first unless its disk store already holds a file for it
// (plugins/ipam/host-local/backend/disk/backend.go: `<dataDir>/<network>/<ip>`, `<id>\r\n<ifname>`).
// The agent reserves it, as it reserves the vxlan source VIP; a pod that already holds it keeps it.
// test/interop shows the real plugins giving the first pod another address.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bareNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, WIN_IP, TestCluster } from '../support/cluster.js';

const WIN = 'win-1';

let cluster: TestCluster;
beforeEach(async () => {
  cluster = await new TestCluster().start();
  cluster.api.addNode(bareNode({ name: WIN, podCIDR: '10.244.7.0/24', internalIP: WIN_IP }));
});
afterEach(() => cluster.stop());

describe('host-gw reserves cbr0_ep’s address in host-local’s store', () => {
  it('writes the reservation once the bridge endpoint exists', async () => {
    const ipam = join(cluster.dir, WIN, 'ipam');
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: [`--iface=${WIN_IP}`, `--cni-ipam-data-dir=${ipam}`] });
    await agent.waitReady();
    const ep = agent.state.read().endpoints.find((e) => e.Name === 'cbr0_ep')!;
    expect(ep.IpConfigurations?.[0]?.IpAddress ?? (ep as { IPAddress?: string }).IPAddress).toBe('10.244.7.2');
    expect(readFileSync(join(ipam, 'cbr0', '10.244.7.2'), 'utf8')).toBe('flanneld-host-endpoint\r\ncbr0_ep');
  });

  it('a pod that already holds the address keeps it; the agent says so', async () => {
    const ipam = join(cluster.dir, WIN, 'ipam');
    mkdirSync(join(ipam, 'cbr0'), { recursive: true });
    writeFileSync(join(ipam, 'cbr0', '10.244.7.2'), 'f00dpod\r\neth0');
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: [`--iface=${WIN_IP}`, `--cni-ipam-data-dir=${ipam}`] });
    await agent.waitReady();
    const warn = await agent.waitForLog("a pod holds the host endpoint's address");
    expect(warn).toMatchObject({ level: 'warn', ip: '10.244.7.2', container: 'f00dpod' });
    expect(readFileSync(join(ipam, 'cbr0', '10.244.7.2'), 'utf8')).toBe('f00dpod\r\neth0');
  });
});
