// `flanneld cleanup` and `flanneld cni-config` against what a real agent run left on the simulated
// dataplane (`--dataplane simulated --dataplane-state FILE`): cleanup removes the agent's network,
// endpoints, routes and files and keeps everything else; the binary dispatches both subcommands.
import { afterEach, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { command as cleanup, inferNetConf } from '../../src/commands/cleanup.js';
import { NetConfError } from '../../src/basics/errors.js';
import { expectCode } from '../support/errors.js';
import { command as cniConfig } from '../../src/commands/cni-config.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { HnsClient } from '../../src/hns/client.js';
import { SimulatedHnsTransport } from '../../src/simulator/hns.js';
import { SimNodeState } from '../support/sim-node.js';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, waitFor, type RunningAgent, WIN_IP } from '../support/cluster.js';
import { MAIN } from '../support/flanneld-process.js';
import { addRoute } from '../support/sim-dataplane.js';

const WIN = 'win-1';
const WIN_CIDR = '10.244.100.0/24';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

function io() {
  const out = { stdout: '', stderr: '' };
  return { out, io: { stdout: (t: string) => (out.stdout += t), stderr: (t: string) => (out.stderr += t), env: {}, platform: 'linux' as NodeJS.Platform } };
}

/** The agent's flags, as the operator passes them to the subcommands. */
function agentFlags(a: RunningAgent): string[] {
  return [
    `--net-config-path=${join(a.dir, 'net-conf.json')}`,
    `--subnet-file=${a.subnetFile}`,
    '--dataplane=simulated',
    `--dataplane-state=${a.statePath}`,
    `--source-vip-file=${join(a.dir, 'run', 'flannel', 'sourcevip.json')}`,
    `--cni-ipam-data-dir=${join(a.dir, 'cni-networks')}`,
  ];
}

async function runToSync(backend: 'host-gw' | 'vxlan'): Promise<RunningAgent> {
  cluster = await new TestCluster().start();
  cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: backend }));
  cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: backend }));
  cluster.addWindowsNode(WIN, WIN_CIDR, WIN_IP);
  // The source VIP is on by default on Windows only: name its file, as an operator on Linux would.
  const extraArgs = [`--source-vip-file=${join(cluster.dir, WIN, 'run', 'flannel', 'sourcevip.json')}`, `--cni-ipam-data-dir=${join(cluster.dir, WIN, 'cni-networks')}`];
  const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: backend === 'vxlan' ? VXLAN_NET_CONF : HOSTGW_NET_CONF, extraArgs });
  await waitFor(() => a.agent.isReady && a.agent.phase === 'running', 'agent ready');
  const sim = () => a.sim;
  if (backend === 'host-gw')
    await waitFor(
      () =>
        sim()
          .listRoutes()
          .filter((r) => r.DestinationPrefix.startsWith('10.244.')).length === 2,
      'peer routes',
    );
  else await waitFor(() => (sim().getNetworkByName('flannel.4096')?.Policies ?? []).filter((p) => p.Type === 'RemoteSubnetRoute').length === 2, 'policies');
  await a.stop();
  return a;
}

describe('flanneld cleanup', () => {
  it('host-gw: removes routes, cbr0_ep, cbr0 and the run directory; keeps a foreign network and route', async () => {
    const a = await runToSync('host-gw');
    // Someone else's objects on the same node.
    const before = new SimulatedDataplane({ statePath: a.statePath });
    // Another L2Bridge network on the same vSwitch, so the vNIC (and its other routes) outlive cbr0.
    before.createNetwork('test', {
      Name: 'other',
      Type: 'L2Bridge',
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '192.168.50.0/24' }] }],
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    const vnic = before.listAdapters().find((x) => x.IPAddress === WIN_IP)!;
    addRoute(before, { DestinationPrefix: '172.16.0.0/16', NextHop: '10.0.0.1', InterfaceIndex: vnic.InterfaceIndex, Metric: 256 });
    // An administrator's route inside the cluster CIDR: cleanup never created it (not in routes.json).
    addRoute(before, { DestinationPrefix: '10.244.200.0/24', NextHop: '10.0.0.99', InterfaceIndex: vnic.InterfaceIndex, Metric: 256 });
    writeFileSync(join(a.dir, 'other.txt'), 'x'); // not in the run dir: untouched anyway
    // The agent reserved cbr0_ep's .2 in host-local's store (src/backends/ipam-reservation.ts); a pod's
    // reservation beside it is not the agent's and stays.
    const bridgeReservation = join(a.dir, 'cni-networks', 'cbr0', '10.244.100.2');
    expect(readFileSync(bridgeReservation, 'utf8')).toMatch(/^flanneld-host-endpoint\r\n/);
    const podReservation = join(a.dir, 'cni-networks', 'cbr0', '10.244.100.3');
    writeFileSync(podReservation, 'c0ffee\r\neth0');

    const dry = io();
    expect(await cleanup.run([...agentFlags(a), '--dry-run'], dry.io)).toBe(0);
    expect(dry.out.stdout).toContain('would remove HNS network cbr0');
    expect(new SimulatedDataplane({ statePath: a.statePath }).getNetworkByName('cbr0')).toBeDefined();
    expect(existsSync(a.subnetFile)).toBe(true);

    const r = io();
    expect(await cleanup.run(agentFlags(a), r.io)).toBe(0);
    const lines = r.out.stdout.trim().split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^removed route 10\.244\.1\.0\/24 via 10\.0\.0\.11 on vEthernet \(Ethernet\)/),
        expect.stringMatching(/^removed route 10\.244\.2\.0\/24 via 10\.0\.0\.12 /),
        expect.stringMatching(/^removed HNS endpoint cbr0_ep \(10\.244\.100\.2, ID /),
        expect.stringMatching(/^removed HNS network cbr0 \(L2Bridge, 10\.244\.100\.0\/24, ID /),
        `removed file ${bridgeReservation}`,
        `removed file ${a.subnetFile}`,
        `removed directory ${join(a.dir, 'run', 'flannel')}`,
      ]),
    );
    const after = new SimulatedDataplane({ statePath: a.statePath });
    expect(after.listNetworks().map((n) => n.Name)).toEqual(['other']);
    expect(after.listEndpoints()).toEqual([]);
    expect(
      after
        .listRoutes()
        .filter((x) => x.DestinationPrefix.startsWith('10.244.'))
        .map((x) => `${x.DestinationPrefix} via ${x.NextHop}`),
    ).toEqual(['10.244.200.0/24 via 10.0.0.99']);
    expect(r.out.stdout).toMatch(/^kept route 10\.244\.200\.0\/24 via 10\.0\.0\.99 on vEthernet \(Ethernet\) \(index \d+\): flanneld did not create it/m);
    expect(r.out.stdout).toContain(`removed file ${join(a.dir, 'run', 'flannel', 'routes.json')}`);
    expect(after.listRoutes().some((x) => x.DestinationPrefix === '172.16.0.0/16')).toBe(true);
    expect(existsSync(join(a.dir, 'run', 'flannel'))).toBe(false);
    expect(existsSync(join(a.dir, 'other.txt'))).toBe(true);
    expect(existsSync(bridgeReservation)).toBe(false);
    expect(existsSync(podReservation)).toBe(true);

    const again = io();
    expect(await cleanup.run(agentFlags(a), again.io)).toBe(0);
    expect(again.out.stdout).toMatch(/^nothing to remove/);
  });

  it('vxlan: removes the source VIP endpoint and files and the Overlay network; a busy run dir is kept', async () => {
    const a = await runToSync('vxlan');
    const vipFile = join(a.dir, 'run', 'flannel', 'sourcevip.json');
    expect(JSON.parse(readFileSync(vipFile, 'utf8'))).toMatchObject({ ip: '10.244.100.2', network: 'flannel.4096' });
    writeFileSync(join(a.dir, 'run', 'flannel', 'operator-notes.txt'), 'keep me');

    const r = io();
    expect(await cleanup.run(agentFlags(a), r.io)).toBe(0);
    expect(r.out.stdout).toMatch(/^removed HNS endpoint flannel\.4096_sourcevip \(10\.244\.100\.2, ID /m);
    expect(r.out.stdout).toMatch(/^removed HNS network flannel\.4096 \(Overlay, 10\.244\.100\.0\/24, 2 RemoteSubnetRoute policies, ID /m);
    expect(r.out.stdout).toContain(`removed file ${vipFile}`);
    expect(r.out.stdout).toMatch(/^kept .*holds other files \(operator-notes\.txt\)/m);
    const after = new SimulatedDataplane({ statePath: a.statePath });
    expect(after.listNetworks()).toEqual([]);
    expect(after.listEndpoints()).toEqual([]);
    // The vSwitch went with the last network: the node IP is back on the physical adapter.
    expect(after.listAdapters().find((x) => x.IPAddress === WIN_IP)?.Name).toBe('Ethernet');
    expect(existsSync(join(a.dir, 'run', 'flannel', 'operator-notes.txt'))).toBe(true);
    expect(existsSync(a.subnetFile)).toBe(false);
  });

  /**
   * What --network-policy leaves on the node (src/policy/controller.ts): a pod endpoint of the agent's network with
   * the agent's ACL rules (Id prefix flannel-np-) naming its IP set, beside another engine's rule and set.
   */
  async function withPolicyObjects(a: RunningAgent) {
    const hns = new HnsClient(new SimulatedHnsTransport(new SimulatedDataplane({ statePath: a.statePath })));
    const net = (await hns.getNetworkByName('cbr0'))!;
    const ep = await hns.createEndpoint(net.ID!, { Name: 'pod-a', SchemaVersion: { Major: 2, Minor: 0 }, IpConfigurations: [{ IpAddress: '10.244.100.5' }] });
    await hns.addSetPolicies(net.ID!, [
      { Id: 'flannel-np-set-peers', Name: 'flannel-np-set-peers', PolicyType: 'IPSET', Values: '10.244.1.7,10.244.2.8' },
      { Id: 'azure-npm-set', Name: 'azure-npm-set', PolicyType: 'IPSET', Values: '10.0.0.9' },
    ]);
    await hns.addEndpointAcls(ep.ID!, [
      { Id: 'flannel-np-allow', Action: 'Allow', Direction: 'In', RuleType: 'Switch', Priority: 3000, RemoteAddresses: 'flannel-np-set-peers', Protocols: '6', LocalPorts: '80' },
      { Id: 'flannel-np-deny', Action: 'Block', Direction: 'In', RuleType: 'Switch', Priority: 65000 },
      { Id: 'calico-rule', Action: 'Allow', Direction: 'In', RuleType: 'Switch', Priority: 500, RemoteAddresses: 'azure-npm-set' },
    ]);
    const read = async () => ({
      acls: ((await hns.getEndpointAcls(ep.ID!)) ?? []).map((r) => r.Id).sort(),
      sets: ((await hns.getSetPolicies(net.ID!)) ?? []).map((x) => x.Id).sort(),
    });
    return { hns, net: net.ID!, ep: ep.ID!, read };
  }

  it("--network-policy-only: removes the agent's ACL rules, then the IP sets they named; keeps others' rules and sets, the network, its endpoints and files", async () => {
    const a = await runToSync('host-gw');
    const { read } = await withPolicyObjects(a);
    const all = { acls: ['calico-rule', 'flannel-np-allow', 'flannel-np-deny'], sets: ['azure-npm-set', 'flannel-np-set-peers'] };
    expect(await read()).toEqual(all);

    const dry = io();
    expect(await cleanup.run([...agentFlags(a), '--network-policy-only', '--dry-run'], dry.io)).toBe(0);
    expect(dry.out.stdout).toMatch(/^would remove 2 NetworkPolicy rules \(flannel-np-allow, flannel-np-deny\) from HNS endpoint pod-a \(10\.244\.100\.5, ID /m);
    expect(dry.out.stdout).toMatch(/^would remove IP set flannel-np-set-peers from HNS network cbr0$/m);
    expect(await read()).toEqual(all);

    const r = io();
    expect(await cleanup.run([...agentFlags(a), '--network-policy-only'], r.io)).toBe(0);
    expect(r.out.stdout).toMatch(/^removed 2 NetworkPolicy rules \(flannel-np-allow, flannel-np-deny\) from HNS endpoint pod-a /m);
    expect(r.out.stdout).toMatch(/^removed IP set flannel-np-set-peers from HNS network cbr0$/m);
    expect(r.out.stdout).not.toMatch(/HNS network cbr0 \(L2Bridge/);
    expect(await read()).toEqual({ acls: ['calico-rule'], sets: ['azure-npm-set'] });
    const after = new SimulatedDataplane({ statePath: a.statePath });
    expect(after.getNetworkByName('cbr0')).toBeDefined();
    expect(
      after
        .listEndpoints()
        .map((e) => e.Name)
        .sort(),
    ).toEqual(['cbr0_ep', 'pod-a']);
    expect(existsSync(a.subnetFile)).toBe(true);

    const again = io();
    expect(await cleanup.run([...agentFlags(a), '--network-policy-only'], again.io)).toBe(0);
    expect(again.out.stdout).toMatch(/^nothing to remove: no NetworkPolicy rule or IP set of flanneld's on HNS network cbr0/m);
  });

  it('--network-policy-only: an endpoint it cannot read is unknown: removes nothing, says so, and fails', async () => {
    const a = await runToSync('host-gw');
    const { read, ep } = await withPolicyObjects(a);
    new SimNodeState(a.statePath).addFault({ op: 'HcnQueryEndpointProperties', match: ep, hresult: '0x80070005', remaining: -1 });
    const r = io();
    expect(await cleanup.run([...agentFlags(a), '--network-policy-only'], r.io)).toBe(1);
    expect(r.out.stdout).toMatch(/^unknown NetworkPolicy rules on the endpoints of HNS network cbr0: reading them failed \(.*0x80070005.*\); removed no rule and no IP set/m);
    new SimNodeState(a.statePath).edit((s) => void (s.faults = []));
    expect(await read()).toEqual({ acls: ['calico-rule', 'flannel-np-allow', 'flannel-np-deny'], sets: ['azure-npm-set', 'flannel-np-set-peers'] });
  });

  it('a removal HNS refuses keeps the IP sets (a rule may still name them) and fails', async () => {
    const a = await runToSync('host-gw');
    const { read } = await withPolicyObjects(a);
    new SimNodeState(a.statePath).addFault({ op: 'HcnModifyEndpoint', match: 'flannel-np-allow', hresult: '0x80070057', remaining: -1 });
    const r = io();
    expect(await cleanup.run([...agentFlags(a), '--network-policy-only'], r.io)).toBe(1);
    expect(r.out.stdout).toMatch(/^unknown 2 NetworkPolicy rules on HNS endpoint pod-a .*: removing them failed/m);
    expect(r.out.stdout).toMatch(/^kept IP set flannel-np-set-peers: rules HNS did not remove may still name it/m);
    new SimNodeState(a.statePath).edit((s) => void (s.faults = []));
    expect((await read()).sets).toEqual(['azure-npm-set', 'flannel-np-set-peers']);
  });

  it("full cleanup names the agent's NetworkPolicy rules and sets it removes before the network", async () => {
    const a = await runToSync('host-gw');
    await withPolicyObjects(a);
    const r = io();
    expect(await cleanup.run(agentFlags(a), r.io)).toBe(0);
    const lines = r.out.stdout.split('\n');
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    expect(at(/^removed 2 NetworkPolicy rules /)).toBeGreaterThanOrEqual(0);
    expect(at(/^removed 2 NetworkPolicy rules /)).toBeLessThan(at(/^removed IP set flannel-np-set-peers /));
    expect(at(/^removed IP set flannel-np-set-peers /)).toBeLessThan(at(/^removed HNS network cbr0 /));
    expect(new SimulatedDataplane({ statePath: a.statePath }).listNetworks()).toEqual([]);
  });

  it('removes the CNI conflist cni-config wrote; keeps a foreign file at that path', async () => {
    const a = await runToSync('vxlan');
    const conflist = join(a.dir, 'etc', 'cni', 'net.d', '10-flannel.conflist');
    const w = io();
    expect(await cniConfig.run([`--net-config-path=${join(a.dir, 'net-conf.json')}`, `--management-ip=${WIN_IP}`, '-o', conflist], w.io)).toBe(0);
    expect(existsSync(conflist)).toBe(true);

    const dry = io();
    expect(await cleanup.run([...agentFlags(a), `--cni-conf-file=${conflist}`, '--dry-run'], dry.io)).toBe(0);
    expect(dry.out.stdout).toContain(`would remove file ${conflist}`);
    expect(existsSync(conflist)).toBe(true);

    const r = io();
    expect(await cleanup.run([...agentFlags(a), `--cni-conf-file=${conflist}`], r.io)).toBe(0);
    expect(r.out.stdout).toContain(`removed file ${conflist}`);
    expect(existsSync(conflist)).toBe(false);

    // Another plugin's conflist at the same path (the operator switched CNIs): kept, and said so.
    writeFileSync(conflist, JSON.stringify({ cniVersion: '0.3.0', name: 'Calico', plugins: [{ type: 'calico' }] }));
    const again = io();
    expect(await cleanup.run([...agentFlags(a), `--cni-conf-file=${conflist}`], again.io)).toBe(0);
    expect(again.out.stdout).toContain(`kept ${conflist}: not flannel's CNI config for network flannel.4096`);
    expect(existsSync(conflist)).toBe(true);
  });

  it('without net-conf.json (the DaemonSet never put it on the host): tells the network from subnet.env and HNS, through the built CLI', async () => {
    if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
    const a = await runToSync('vxlan');
    const gone = join(a.dir, 'no-such', 'net-conf.json');
    const flags = agentFlags(a).map((f) => (f.startsWith('--net-config-path=') ? `--net-config-path=${gone}` : f));
    const env = { PATH: process.env['PATH'] ?? '' };
    const r = spawnSync(process.execPath, [MAIN, 'cleanup', ...flags], { encoding: 'utf8', env });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`no net-conf.json at ${gone}; network flannel.4096 (vxlan, ${WIN_CIDR}): from ${a.subnetFile} and HNS`);
    expect(r.stdout).toMatch(/^removed HNS endpoint flannel\.4096_sourcevip \(10\.244\.100\.2, ID /m);
    expect(r.stdout).toMatch(/^removed HNS network flannel\.4096 \(Overlay, 10\.244\.100\.0\/24, 2 RemoteSubnetRoute policies, ID /m);
    const after = new SimulatedDataplane({ statePath: a.statePath });
    expect(after.listNetworks()).toEqual([]);
    expect(after.listEndpoints()).toEqual([]);
    expect(existsSync(a.subnetFile)).toBe(false);
  });

  it('without net-conf.json, host-gw: finds cbr0 by the subnet in subnet.env and removes its routes too', async () => {
    const a = await runToSync('host-gw');
    const gone = join(a.dir, 'no-such', 'net-conf.json');
    const r = io();
    expect(await cleanup.run([...agentFlags(a), `--net-config-path=${gone}`], r.io)).toBe(0);
    expect(r.out.stdout).toContain(`network cbr0 (host-gw, ${WIN_CIDR}): from ${a.subnetFile} and HNS`);
    expect(r.out.stdout).toMatch(/^removed route 10\.244\.1\.0\/24 via 10\.0\.0\.11 /m);
    expect(r.out.stdout).toMatch(/^removed HNS network cbr0 \(L2Bridge, /m);
    const after = new SimulatedDataplane({ statePath: a.statePath });
    expect(after.listNetworks()).toEqual([]);
    expect(after.listRoutes().filter((x) => x.DestinationPrefix.startsWith('10.244.'))).toEqual([]);
  });

  it('without net-conf.json and no HNS network holding the subnet: removes the files only, never an HNS network merely named cbr0', async () => {
    const a = await runToSync('host-gw');
    // subnet.env names another subnet than the cbr0 on the node: that cbr0 is nothing cleanup can tell is flannel's.
    writeFileSync(a.subnetFile, readFileSync(a.subnetFile, 'utf8').replace(/10\.244\.100\./g, '10.244.200.'));
    const gone = join(a.dir, 'no-such', 'net-conf.json');
    const r = io();
    expect(await cleanup.run([...agentFlags(a), `--net-config-path=${gone}`], r.io)).toBe(0);
    expect(r.out.stdout).toContain('removing the files only');
    expect(r.out.stdout).not.toMatch(/HNS network cbr0/);
    expect(new SimulatedDataplane({ statePath: a.statePath }).getNetworkByName('cbr0')).toBeDefined();
  });

  it("net-conf.json names a network HNS does not have (the agent adopted another): cleanup takes the one holding subnet.env's subnet", async () => {
    const a = await runToSync('vxlan');
    const nc = join(a.dir, 'net-conf-renamed.json');
    writeFileSync(nc, JSON.stringify({ ...VXLAN_NET_CONF, Backend: { ...VXLAN_NET_CONF.Backend, Name: 'vxlan0' } }));
    const flags = agentFlags(a).map((f) => (f.startsWith('--net-config-path=') ? `--net-config-path=${nc}` : f));
    const r = io();
    expect(await cleanup.run(flags, r.io)).toBe(0);
    expect(r.out.stdout).toContain(`no HNS network vxlan0; network flannel.4096 (vxlan, ${WIN_CIDR}): from ${a.subnetFile} and HNS (the agent adopted it)`);
    expect(r.out.stdout).toMatch(/^removed HNS network flannel\.4096 \(Overlay, /m);
    expect(new SimulatedDataplane({ statePath: a.statePath }).listNetworks()).toEqual([]);
  });

  it("without net-conf.json, two networks holding the own subnet (a half-done migration): the boot record's ID tells flannel's; without it both are refused, named", async () => {
    const a = await runToSync('vxlan');
    const model = new SimulatedDataplane({ statePath: a.statePath });
    model.createNetwork('test', {
      Name: 'vxlan0',
      Type: 'Overlay',
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: WIN_CIDR }] }],
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    const networks = model.listNetworks().map((n) => ({ Name: n.Name, Type: n.Type, Subnets: [{ AddressPrefix: n.Ipams![0].Subnets![0].IpAddressPrefix }] }));
    const infer = (rename: string) =>
      inferNetConf({
        netConfPath: 'gone.json',
        subnetFile: a.subnetFile,
        subnetEnv: readFileSync(a.subnetFile, 'utf8'),
        sourceVip: undefined,
        networks: networks.map((n) => (n.Name === 'vxlan0' ? { ...n, Name: rename } : n)),
      });
    // No boot record: two networks of flannel's names holding exactly the subnet are refused, both named.
    const err = expectCode(() => infer('flannel.4097'), NetConfError, 'FLANNEL_ERR_NET_CONF');
    expect(err.context['subnet']).toBe(WIN_CIDR);
    expect(err.message).toMatch(/flannel\.4096 Overlay 10\.244\.100\.0\/24; flannel\.4097 Overlay|flannel\.4097 Overlay 10\.244\.100\.0\/24; flannel\.4096 Overlay/);
    expect(infer('vxlan0').netConf.backend.name).toBe('flannel.4096');
    const r = io();
    expect(await cleanup.run([...agentFlags(a), `--net-config-path=${join(a.dir, 'gone.json')}`], r.io)).toBe(0);
    expect(r.out.stdout).toMatch(/^removed HNS network flannel\.4096 \(Overlay, /m);
    expect(model.listNetworks().map((n) => n.Name)).toEqual(['vxlan0']);
    // No subnet.env either: nothing to tell the network from.
    expectCode(
      () => inferNetConf({ netConfPath: 'gone.json', subnetFile: 'subnet.env', subnetEnv: undefined, sourceVip: undefined, networks: [] }),
      NetConfError,
      'FLANNEL_ERR_NET_CONF',
    );
  });

  it("without net-conf.json: an admin's L2Bridge network External on 10.0.0.0/8 that merely overlaps FLANNEL_SUBNET is never removed; cleanup refuses, naming it", async () => {
    const a = await runToSync('vxlan');
    const model = new SimulatedDataplane({ statePath: a.statePath });
    // A reboot took the non-persistent Overlay network; the admin's External network spans the pod subnet.
    model.deleteNetwork('test', model.getNetworkByName('flannel.4096')!.ID!);
    model.createNetwork('test', {
      Name: 'External',
      Type: 'L2Bridge',
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.0.0.0/8' }] }],
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    const r = io();
    expect(await cleanup.run([...agentFlags(a), `--net-config-path=${join(a.dir, 'gone.json')}`], r.io)).toBe(2);
    expect(r.out.stderr).toContain('External L2Bridge 10.0.0.0/8');
    expect(r.out.stdout).not.toMatch(/removed/);
    expect(model.getNetworkByName('External')).toBeDefined();
    expect(existsSync(a.subnetFile)).toBe(true);
  });

  it("without net-conf.json: the network the boot record names by ID is flannel's, whatever else overlaps; the admin's network is kept", async () => {
    const a = await runToSync('host-gw');
    const model = new SimulatedDataplane({ statePath: a.statePath });
    model.createNetwork('test', {
      Name: 'External',
      Type: 'L2Bridge',
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.0.0.0/8' }] }],
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    const r = io();
    expect(await cleanup.run([...agentFlags(a), `--net-config-path=${join(a.dir, 'gone.json')}`], r.io)).toBe(0);
    expect(r.out.stdout).toMatch(/^removed HNS network cbr0 \(L2Bridge, /m);
    expect(model.listNetworks().map((n) => n.Name)).toEqual(['External']);
  });

  it("inferNetConf: a flannel name with exactly the recorded subnet is flannel's; an overlapping network of another name is only a candidate", () => {
    const subnetEnv = `FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=${WIN_CIDR.replace('.0/24', '.1/24')}\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n`;
    const net = (Name: string, Type: string, prefix: string, ID = Name.toUpperCase()) => ({ Name, ID, Type, Subnets: [{ AddressPrefix: prefix }] });
    const base = { netConfPath: 'gone.json', subnetFile: 'subnet.env', subnetEnv, sourceVip: undefined };
    expect(inferNetConf({ ...base, networks: [net('flannel.4096', 'Overlay', WIN_CIDR), net('External', 'L2Bridge', '10.0.0.0/8')] }).netConf.backend.name).toBe('flannel.4096');
    // A flannel name on another subnet proves nothing.
    const err = expectCode(() => inferNetConf({ ...base, networks: [net('cbr0', 'L2Bridge', '10.244.0.0/16')] }), NetConfError, 'FLANNEL_ERR_NET_CONF');
    expect(err.message).toContain('cbr0 L2Bridge 10.244.0.0/16');
    // The boot record's ID proves it whatever the name.
    const boot = { name: 'vxlan0', id: 'abc-1' };
    expect(inferNetConf({ ...base, boot, networks: [net('vxlan0', 'Overlay', WIN_CIDR, 'ABC-1'), net('External', 'L2Bridge', '10.0.0.0/8')] }).netConf.backend.name).toBe('vxlan0');
  });

  it('HNS network names reach the terminal escaped, as flanneld status prints them (an ESC in a name never drives the terminal)', async () => {
    const a = await runToSync('vxlan');
    const model = new SimulatedDataplane({ statePath: a.statePath });
    rmSync(join(dirname(a.subnetFile), 'boot.json'), { force: true });
    const hostile = 'x\u001b]0;owned\u0007\u001b[2J';
    for (const Name of [hostile, `${hostile}2`]) {
      model.createNetwork('test', { Name, Type: 'Overlay', Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: WIN_CIDR }] }], SchemaVersion: { Major: 2, Minor: 0 } });
    }
    model.deleteNetwork('test', model.getNetworkByName('flannel.4096')!.ID!);
    const r = io();
    expect(await cleanup.run([...agentFlags(a), `--net-config-path=${join(a.dir, 'gone.json')}`], r.io)).toBe(2);
    const printed = r.out.stdout + r.out.stderr;
    expect(printed).toContain('x\\u001b]0;owned\\u0007\\u001b[2J');
    expect([...printed].filter((c) => c !== '\n' && c.charCodeAt(0) < 0x20)).toEqual([]);
    expect(model.listNetworks()).toHaveLength(2);
  });

  it("--subnet-file naming a file that is not flanneld's (a typo naming hosts) keeps it, and a boot.json beside it that is not flanneld's", async () => {
    const a = await runToSync('host-gw');
    const etc = join(a.dir, 'etc');
    mkdirSync(etc, { recursive: true });
    const hosts = join(etc, 'hosts');
    writeFileSync(hosts, '127.0.0.1 localhost\n10.0.0.5 registry\n');
    writeFileSync(join(etc, 'boot.json'), '{"kind":"someone else\'s"}\n');
    writeFileSync(join(etc, 'flanneld.lock'), 'not a lock\n');
    const flags = agentFlags(a).map((f) => (f.startsWith('--subnet-file=') ? `--subnet-file=${hosts}` : f));
    const r = io();
    expect(await cleanup.run(flags, r.io)).toBe(0);
    expect(readFileSync(hosts, 'utf8')).toBe('127.0.0.1 localhost\n10.0.0.5 registry\n');
    expect(existsSync(join(etc, 'boot.json'))).toBe(true);
    expect(existsSync(join(etc, 'flanneld.lock'))).toBe(true);
    expect(r.out.stdout).toContain(`kept ${hosts}: not a subnet.env flanneld wrote`);
    expect(r.out.stdout).not.toContain(`file ${hosts}`);
    // Agent files someone edited are kept too: a comment or `KEY =` in subnet.env, a lock of no process (PID 0).
    const edited = join(a.dir, 'edited');
    mkdirSync(edited, { recursive: true });
    const env = readFileSync(a.subnetFile, 'utf8');
    for (const [name, text] of [
      ['subnet.env', `${env}# set by hand\n`],
      ['spaced.env', env.replace('FLANNEL_MTU=', 'FLANNEL_MTU =')],
      ['flanneld.lock', '{"pid":0,"bootTimeMs":1}\n'],
    ]) {
      writeFileSync(join(edited, name), text);
    }
    for (const subnetFile of ['subnet.env', 'spaced.env']) {
      const re = io();
      expect(
        await cleanup.run(
          agentFlags(a).map((f) => (f.startsWith('--subnet-file=') ? `--subnet-file=${join(edited, subnetFile)}` : f)),
          re.io,
        ),
      ).toBe(0);
      expect(re.out.stdout).toContain(`kept ${join(edited, subnetFile)}: not a subnet.env flanneld wrote`);
      expect(re.out.stdout).toContain(`kept ${join(edited, 'flanneld.lock')}: not an agent lock flanneld wrote`);
    }
    expect(existsSync(join(edited, 'subnet.env'))).toBe(true);
    expect(existsSync(join(edited, 'spaced.env'))).toBe(true);
    expect(existsSync(join(edited, 'flanneld.lock'))).toBe(true);
    // The real subnet.env and boot.json are flanneld's: removed.
    const r2 = io();
    expect(await cleanup.run(agentFlags(a), r2.io)).toBe(0);
    expect(r2.out.stdout).toContain(`removed file ${a.subnetFile}`);
    expect(r2.out.stdout).toContain(`removed file ${join(dirname(a.subnetFile), 'boot.json')}`);
  });

  // Delete only what is provably the agent's (docs/install.md, Uninstalling): a network of the agent's name
  // that is neither the one boot.json recorded (its ID) nor on this node's FLANNEL_SUBNET is an
  // administrator's, however it is named. Kept, said why, and nothing in it touched.
  it.each([
    ['host-gw', 'cbr0', 'L2Bridge', '192.168.100.0/24'],
    ['vxlan', 'flannel.4096', 'Overlay', '172.30.0.0/24'],
  ] as const)("%s: an administrator's network named like the agent's (%s %s on %s) is kept, named, and why", async (backend, name, type, prefix) => {
    const a = await runToSync(backend);
    const model = new SimulatedDataplane({ statePath: a.statePath });
    // The agent's network went (a reboot, an admin); someone made another of that name on another subnet.
    model.deleteNetwork('test', model.getNetworkByName(name)!.ID!);
    const admin = model.createNetwork('test', {
      Name: name,
      Type: type,
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: prefix }] }],
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    const theirs = model.createEndpoint('test', admin.ID!, {
      Name: 'their-vm',
      IpConfigurations: [{ IpAddress: prefix.replace('.0/24', '.7') }],
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    for (const dryRun of [true, false]) {
      const r = io();
      expect(await cleanup.run([...agentFlags(a), ...(dryRun ? ['--dry-run'] : [])], r.io)).toBe(0);
      expect(r.out.stdout).not.toMatch(/remove(d)? HNS network/);
      expect(r.out.stdout).not.toContain('their-vm');
      const kept = r.out.stdout.split('\n').find((l) => l.startsWith(`kept HNS network ${name} (${type}, ${prefix}, ID ${admin.ID}): not flanneld's: `));
      expect(kept).toContain(`the one ${join(dirname(a.subnetFile), 'boot.json')} recorded`);
      expect(kept).toContain(`FLANNEL_SUBNET ${WIN_CIDR}`);
    }
    const after = new SimulatedDataplane({ statePath: a.statePath });
    expect(after.getNetworkByName(name)?.ID).toBe(admin.ID);
    expect(after.listEndpoints().map((e) => e.ID)).toContain(theirs.ID);
  });

  it('the pod endpoints that go with the network are named and counted, in --dry-run too', async () => {
    const a = await runToSync('host-gw');
    const model = new SimulatedDataplane({ statePath: a.statePath });
    const net = model.getNetworkByName('cbr0')!;
    const pods = ['10.244.100.5', '10.244.100.6'].map((ip, i) =>
      model.createEndpoint('test', net.ID!, { Name: `pod-${i}`, IpConfigurations: [{ IpAddress: ip }], SchemaVersion: { Major: 2, Minor: 0 } }),
    );
    const podLines = (verb: string) => pods.map((p, i) => `${verb} pod endpoint pod-${i} (10.244.100.${5 + i}, ID ${p.ID}) with HNS network cbr0`);
    const dry = io();
    expect(await cleanup.run([...agentFlags(a), '--dry-run'], dry.io)).toBe(0);
    expect(dry.out.stdout.split('\n')).toEqual(expect.arrayContaining(podLines('would remove')));
    expect(dry.out.stdout).toMatch(/^would remove HNS network cbr0 \(L2Bridge, 10\.244\.100\.0\/24, ID [^)]+\) with 2 pod endpoints$/m);
    expect(new SimulatedDataplane({ statePath: a.statePath }).listEndpoints()).toHaveLength(3);

    const r = io();
    expect(await cleanup.run(agentFlags(a), r.io)).toBe(0);
    expect(r.out.stdout.split('\n')).toEqual(expect.arrayContaining(podLines('removed')));
    expect(r.out.stdout).toMatch(/^removed HNS network cbr0 \(L2Bridge, .*\) with 2 pod endpoints$/m);
    expect(r.out.stdout).not.toMatch(/pod endpoint cbr0_ep/);
    expect(new SimulatedDataplane({ statePath: a.statePath }).listEndpoints()).toEqual([]);
  });

  it('what is not a regular file in the run directory (a directory named like a temporary file, or like routes.json) is skipped and kept, never an EISDIR', async () => {
    const a = await runToSync('vxlan');
    const run = dirname(a.subnetFile);
    mkdirSync(join(run, 'boot.json.tmp-4242'));
    const r = io();
    expect(await cleanup.run(agentFlags(a), r.io)).toBe(0);
    expect(r.out.stderr).toBe('');
    expect(r.out.stdout).toMatch(/^removed HNS network flannel\.4096 /m);
    expect(r.out.stdout).toContain(`kept ${run}: holds other files (boot.json.tmp-4242)`);
    expect(existsSync(a.subnetFile)).toBe(false);
    expect(existsSync(join(run, 'boot.json.tmp-4242'))).toBe(true);

    mkdirSync(join(run, 'routes.json'));
    const again = io();
    expect(await cleanup.run(agentFlags(a), again.io)).toBe(0);
    expect(again.out.stderr).toBe('');
    expect(again.out.stdout).toContain(`kept ${join(run, 'routes.json')}: not a regular file`);
    expect(existsSync(join(run, 'routes.json'))).toBe(true);
  });

  it('neither net-conf.json nor subnet.env (a node flannel never ran on): nothing to remove, exit 0', async () => {
    // The uninstall DaemonSet (deploy/cleanup) runs on every Windows node; exit 2 there crash-loops its init container.
    cluster = await new TestCluster().start();
    const r = io();
    const flags = ['--dataplane=simulated', `--net-config-path=${join(cluster.dir, 'nope.json')}`, `--subnet-file=${join(cluster.dir, 'run', 'subnet.env')}`];
    expect(await cleanup.run(flags, r.io)).toBe(0);
    expect(r.out.stderr).toBe('');
    expect(r.out.stdout).toMatch(/^nothing to remove: no net-conf\.json at .*nope\.json and no .*subnet\.env/);
  });

  it('no net-conf.json and a subnet.env that names no network is still a clear error (exit 2)', async () => {
    cluster = await new TestCluster().start();
    const env = join(cluster.dir, 'run', 'subnet.env');
    mkdirSync(join(cluster.dir, 'run'), { recursive: true });
    writeFileSync(env, 'FLANNEL_MTU=1450\n');
    const r = io();
    expect(await cleanup.run(['--dataplane=simulated', `--net-config-path=${join(cluster.dir, 'nope.json')}`, `--subnet-file=${env}`], r.io)).toBe(2);
    expect(r.out.stderr).toContain('nope.json');
  });
});

describe('the binary dispatches the subcommands', () => {
  it('cni-config and cleanup run from dist/main.js', async () => {
    if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
    cluster = await new TestCluster().start();
    const dir = join(cluster.dir, 'bin');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'net-conf.json'), JSON.stringify(VXLAN_NET_CONF));
    const env = { PATH: process.env['PATH'] ?? '', FLANNELD_NET_CONFIG_PATH: join(dir, 'net-conf.json'), FLANNELD_DATAPLANE: 'simulated' };
    const cni = spawnSync(process.execPath, [MAIN, 'cni-config', '--management-ip', '192.168.1.20', '--management-subnet=192.168.1.0/24'], { encoding: 'utf8', env });
    expect(cni.stderr).toBe('');
    expect(cni.status).toBe(0);
    expect(JSON.parse(cni.stdout)).toMatchObject({ name: 'flannel.4096', plugins: [{ type: 'flannel', delegate: { type: 'win-overlay', apiVersion: 2 } }] });
    const help = spawnSync(process.execPath, [MAIN, 'cleanup', '--help'], { encoding: 'utf8', env });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('--dry-run');
    const clean = spawnSync(process.execPath, [MAIN, 'cleanup', `--subnet-file=${join(dir, 'run', 'subnet.env')}`, `--dataplane-state=${join(dir, 'state.json')}`], {
      encoding: 'utf8',
      env,
    });
    expect(clean.status).toBe(0);
    expect(clean.stdout).toMatch(/^nothing to remove/);
  });
});
