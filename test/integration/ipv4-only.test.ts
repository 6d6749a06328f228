// A Windows vxlan node in a dual-stack cluster, through the built CLI (`node dist/main.js` on a simulated
// node, against the fake API server). Windows cannot run IPv6 on vxlan (checkWindowsIpFamilies), and the fix
// of turning EnableIPv6 off in the shared net-conf would take IPv6 from the Linux nodes; --ipv4-only is the
// operator's explicit way to run this node IPv4-only while the cluster stays dual-stack.
//
// What the Linux nodes need from such a Node, read from upstream flannel:
//  * pkg/subnet/kube/kube.go nodeToLease, with EnableIPv6: ip.ParseIP6 of the public-ipv6 annotation
//    fails on a missing one ("invalid IP address format"), handleAddLeaseEvent logs "Error turning node
//    ... to lease" and drops the Node, its IPv4 half included;
//  * pkg/backend/vxlan/vxlan_network.go handleSubnetEvents: a lease with IPv6 whose backend-v6-data does
//    not json.Unmarshal into {VNI, VtepMAC} is skipped (`continue`) before any route is written.
// linuxDualStackVxlanSees below is that decision.
import { afterEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { bareNode, linuxFlannelNode, type FakeNode } from '../../src/demo/kube-fake/nodes.js';
import type { HcnPolicy } from '../../src/hns/schema.js';
import { TestCluster, WIN_IP, waitFor } from '../support/cluster.js';
import { runFlanneld } from '../support/flanneld-process.js';

const P = 'flannel.alpha.coreos.com/';
const WIN = 'win-1';
const WIN_IP6 = 'fd00:10::2';
const DUAL_VXLAN = { Network: '10.244.0.0/16', EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } };

/** A Linux vxlan node of the dual-stack cluster, annotated as upstream's AcquireLease annotates it. */
function dualLinux(n: number): FakeNode {
  const node = linuxFlannelNode({ name: `linux-${n}`, podCIDR: `10.244.${n}.0/24`, publicIP: `10.0.0.${10 + n}`, backendType: 'vxlan' });
  node.spec = { podCIDR: `10.244.${n}.0/24`, podCIDRs: [`10.244.${n}.0/24`, `fd00:10:244:${n}::/64`] };
  Object.assign(node.metadata.annotations!, { [`${P}backend-v6-data`]: `{"VNI":4096,"VtepMAC":"be:ef:00:00:00:0${n}"}`, [`${P}public-ipv6`]: `fd00:10::${10 + n}` });
  return node;
}

/** Whether Linux flanneld with EnableIPv6 (vxlan) programs a Node (see the file comment); why not, else. */
function linuxDualStackVxlanSees(node: FakeNode): true | string {
  const a = node.metadata.annotations ?? {};
  if (!isIPv6(a[`${P}public-ipv6`] ?? '')) return 'nodeToLease: public-ipv6 does not parse';
  try {
    const v6 = JSON.parse(a[`${P}backend-v6-data`] ?? '') as { VtepMAC?: unknown } | null;
    if (typeof v6?.VtepMAC !== 'string') return 'handleSubnetEvents: backend-v6-data has no VtepMAC';
  } catch {
    return 'handleSubnetEvents: backend-v6-data does not decode';
  }
  return true;
}

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

async function dualStackCluster(): Promise<TestCluster> {
  const c = await new TestCluster().start();
  c.api.addNode(dualLinux(1));
  c.api.addNode(dualLinux(2));
  const win = bareNode({ name: WIN, podCIDR: '10.244.100.0/24', internalIP: WIN_IP });
  win.spec = { podCIDR: '10.244.100.0/24', podCIDRs: ['10.244.100.0/24', 'fd00:10:244:64::/64'] };
  c.api.addNode(win);
  // The node's adapter has its IPv6 address, as a dual-stack cluster's nodes do.
  c.stateOf(WIN).edit((st) => st.adapters.filter((x) => x.IPAddress === WIN_IP).forEach((x) => Object.assign(x, { IPv6Address: WIN_IP6, IPv6PrefixLength: 64 })));
  return c;
}

describe('--ipv4-only: a Windows vxlan node in a dual-stack cluster', () => {
  it('without it the agent stops with FLANNEL_ERR_UNSUPPORTED (vxlan-ipv6), and the fix line names --ipv4-only', async () => {
    cluster = await dualStackCluster();
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: DUAL_VXLAN, args: [`--iface=${WIN_IP}`] });
    expect(await agent.exited).not.toBe(0);
    const err = agent.lines.find((l) => l.level === 'error' && l['code'] === 'FLANNEL_ERR_UNSUPPORTED');
    expect({ err, log: err ? '' : agent.dump() }).toMatchObject({ err: { reason: 'vxlan-ipv6' } });
    expect(err!.message).toContain('--ipv4-only (FLANNELD_IPV4_ONLY=true');
  });

  it('with it: IPv4 only on this node (subnet.env, policies, conflist), and the Node annotated so the Linux nodes program it', async () => {
    cluster = await dualStackCluster();
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: DUAL_VXLAN, args: [`--iface=${WIN_IP}`, '--ip-masq', '--ipv4-only'] });
    await agent.waitReady(30_000).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${agent.dump()}`);
    });
    // Said once, at warn: the operator chose it.
    expect(agent.lines.filter((l) => l.level === 'warn' && l.message.startsWith('--ipv4-only: this node runs IPv4 only'))).toHaveLength(1);
    expect(readFileSync(agent.subnetFile, 'utf8')).toBe('FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.100.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n');
    // The peers' IPv4 halves only: one RemoteSubnetRoute each, no IPv6 prefix anywhere.
    const policies = await agent.state.waitFor((st) => {
      const net = (st.networks ?? []).find((n) => n.Name === 'flannel.4096');
      const routes = (net?.Policies ?? []).filter((p: HcnPolicy) => p.Type === 'RemoteSubnetRoute');
      return routes.length === 2 ? routes.map((p) => (p.Settings as { DestinationPrefix: string }).DestinationPrefix).sort() : undefined;
    }, 'two RemoteSubnetRoute policies');
    expect(policies).toEqual(['10.244.1.0/24', '10.244.2.0/24']);
    expect(JSON.stringify(agent.state.read().networks)).not.toContain('fd00:10:244');

    // The Node: public-ipv6 (the adapter's address) and backend-v6-data repeating the IPv4 VTEP, which the
    // Linux nodes need to program this Node at all; its IPv6 podCIDR is routed here, where no pod has an address.
    const node = await waitFor(() => {
      const n = cluster!.api.getNode(WIN)!;
      return n.metadata.annotations?.[`${P}backend-v6-data`] ? n : undefined;
    }, 'backend-v6-data published');
    const a = node.metadata.annotations!;
    expect(a[`${P}public-ipv6`]).toBe(WIN_IP6);
    expect(a[`${P}backend-v6-data`]).toBe(a[`${P}backend-data`]);
    expect(JSON.parse(a[`${P}backend-data`])).toMatchObject({ VNI: 4096, VtepMAC: expect.stringMatching(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/) });
    expect(linuxDualStackVxlanSees(node)).toBe(true);
    // The model is not vacuous: the annotations an IPv4-only cluster's node has are dropped by Linux here.
    const plain = structuredClone(node);
    delete plain.metadata.annotations![`${P}public-ipv6`];
    delete plain.metadata.annotations![`${P}backend-v6-data`];
    expect(linuxDualStackVxlanSees(plain)).toMatch(/^nodeToLease/);

    // flanneld doctor with the agent's flags judges the node as it runs: IPv4 only (no IPv6 subnet.env lines,
    // lease or routes expected of it).
    const doctor = await runFlanneld(
      [
        'doctor',
        '--json',
        '--kube-subnet-mgr',
        `--kubeconfig-file=${cluster.dir}/kubeconfig`,
        `--net-config-path=${agent.dir}/net-conf.json`,
        `--subnet-file=${agent.subnetFile}`,
        '--dataplane=simulated',
        `--dataplane-state=${agent.state.path}`,
        '--healthz-ip=127.0.0.1',
        `--healthz-port=${agent.port}`,
        `--iface=${WIN_IP}`,
        '--ipv4-only',
      ],
      { NODE_NAME: WIN },
    );
    const rows = Object.fromEntries((JSON.parse(doctor.stdout) as { checks: { id: string; status: string; saw: string }[] }).checks.map((c) => [c.id, c]));
    expect([rows['net-conf']?.status, rows['subnet-env']?.status, rows['lease']?.status, rows['peers']?.status]).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(rows['net-conf'].saw).not.toContain('IPv6');
    await agent.stop();

    // The CNI config for this node, from FLANNELD_IPV4_ONLY as the DaemonSet's ConfigMap gives it to its
    // install-cni-config init container: win-overlay, IPv4 only (not sdnbridge).
    const conf = await runFlanneld(
      [
        'cni-config',
        `--net-config-path=${agent.dir}/net-conf.json`,
        `--subnet-file=${agent.subnetFile}`,
        `--management-ip=${WIN_IP}`,
        '--service-cidr=10.96.0.0/12',
        '--dns-server=10.96.0.10',
      ],
      { FLANNELD_IPV4_ONLY: 'true' },
    );
    expect(conf.stderr).toBe('');
    expect(conf.status).toBe(0);
    expect(conf.stdout).toContain('"type": "win-overlay"');
    expect(conf.stdout).not.toContain('sdnbridge');
    expect(conf.stdout).not.toContain('fd00:');
  }, 60_000);

  it('with no IPv6 address to publish it stops before touching HNS, naming --public-ipv6', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(dualLinux(1));
    const win = bareNode({ name: WIN, podCIDR: '10.244.100.0/24', internalIP: WIN_IP });
    win.spec = { podCIDR: '10.244.100.0/24', podCIDRs: ['10.244.100.0/24', 'fd00:10:244:64::/64'] };
    cluster.api.addNode(win);
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: DUAL_VXLAN, args: [`--iface=${WIN_IP}`, '--ipv4-only'] });
    expect(await agent.exited).not.toBe(0);
    const err = agent.lines.find((l) => l.level === 'error' && l['code'] === 'FLANNEL_ERR_HOST');
    expect({ err, log: err ? '' : agent.dump() }).toMatchObject({ err: { reason: 'ipv4-only-no-ipv6' } });
    expect(err!.message).toContain('pass --public-ipv6=');
    expect(agent.state.read().networks ?? []).toEqual([]);
  });
});
