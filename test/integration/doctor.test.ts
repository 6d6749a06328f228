// `flanneld doctor` on the simulated node: an agent sets the node up (vxlan, one Linux peer), then each case
// breaks one hop the way an operator, HNS or a crashed pod breaks it on a real node and expects exactly
// that check to fail, every other row passing (ok, or skip where it depends on the broken one). The node
// (its state file and the agent's files) is restored from a copy after each case. The command runs
// in-process with the agent's own flags (src/commands/doctor.ts), through the same seams the agent uses.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import pinned from '../../src/cni-plugins/pinned.json' with { type: 'json' };
import { INSTALL_RECORD } from '../../src/cni-plugins/install.js';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { bareNode, kubeTime } from '../../src/demo/kube-fake/nodes.js';
import { command } from '../../src/commands/doctor.js';
import { renderCniConfig } from '../../src/cni/conflist.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import type { CheckRow } from '../../src/commands/doctor-checks.js';
import type { StatusReport } from '../../src/health/status.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { HOSTGW_NET_CONF, VXLAN_NET_CONF, WIN_IP, freePort, waitFor, type RunningAgent } from '../support/cluster.js';
import { daemonSetRbac } from '../support/deploy-rbac.js';
import { DoctorNode, NODE, SUBNET, type DoctorRun } from '../support/doctor-node.js';
import { editState } from '../support/sim-dataplane.js';

/** The network's name: net-conf's Backend.Name default for VNI 4096. */
const NET = 'flannel.4096';
const PEER = '10.244.1.0/24';

describe('flanneld doctor on the simulated node', () => {
  let node: DoctorNode;
  let healthPort: number;
  /** The agent's health port, which doctor reads the agent's /status on. */
  const health = () => ['--healthz-ip=127.0.0.1', `--healthz-port=${healthPort}`];
  const paths = () => node.paths;
  const doctor = (extra: string[] = []) => node.doctor([...node.args, ...health(), ...extra]);

  const failed = (d: DoctorRun) => d.rows.filter((r) => r.status === 'fail').map((r) => r.id);
  const row = (d: DoctorRun, id: string) => d.rows.find((r) => r.id === id);

  /** Write the conflist cni-config renders for this agent, and the plugins it calls. */
  function writeCni(mutate: (conf: Record<string, unknown>) => void = () => undefined): void {
    const p = paths();
    mkdirSync(p.conf, { recursive: true });
    mkdirSync(p.bin, { recursive: true });
    const conf = renderCniConfig({
      netConf: parseNetConf(JSON.stringify(VXLAN_NET_CONF)),
      subnetFile: p.subnetFile,
      dataDir: join(node.dir, 'flannel'),
      serviceCidr: '10.96.0.0/12',
      managementIP: WIN_IP,
      dnsServers: ['10.96.0.10'],
      dnsSearch: ['svc.cluster.local'],
    });
    mutate(conf);
    writeFileSync(join(p.conf, '10-flannel.conflist'), JSON.stringify(conf, null, 2));
    const files: Record<string, string> = {};
    for (const f of ['flannel.exe', 'win-overlay.exe', 'host-local.exe']) {
      writeFileSync(join(p.bin, f), `MZ ${f}`);
      files[f] = createHash('sha256').update(`MZ ${f}`).digest('hex');
    }
    // install-cni's record of a pinned install (src/cni-plugins/install.ts INSTALL_RECORD).
    writeFileSync(join(p.bin, INSTALL_RECORD), JSON.stringify({ sources: pinned.releases.map((r) => r.sha256), files }));
  }

  /** A pod's reservation in host-local's store (plugins/ipam/host-local/backend/disk: `<id>\r\n<ifname>`). */
  function reserve(ip: string, ageSeconds: number, content: string | Buffer = `0123456789abcdef\r\neth0`): string {
    const path = join(paths().ipam, NET, ip);
    writeFileSync(path, content);
    const t = (Date.now() - ageSeconds * 1000) / 1000;
    utimesSync(path, t, t);
    return path;
  }

  const sim = () => node.sim();

  async function runAgent(before?: (sim: SimulatedDataplane) => void, extra: string[] = []): Promise<RunningAgent> {
    return node.startAgent([...health(), ...extra], before);
  }

  beforeAll(async () => {
    node = await DoctorNode.start();
    healthPort = await freePort();
    const agent = await runAgent();
    await waitFor(
      async () => {
        const r = await fetch(`http://127.0.0.1:${healthPort}/status`).catch(() => undefined);
        return r?.ok && ((await r.json()) as { inSync: boolean }).inSync;
      },
      'the agent in sync',
      30_000,
    );
    writeCni();
    // The healthy node, with the agent running: every row passes, and it read the agent.
    const d = await doctor();
    expect(d.stderr).toBe('');
    expect(failed(d)).toEqual([]);
    expect(row(d, 'agent')?.status).toBe('ok');
    expect(d.code).toBe(0);
    await agent.stop();
    node.keep();
  }, 60_000);

  afterAll(() => node.stop());

  it('passes on the healthy node without the agent, in JSON and as a table', async () => {
    node.restore();
    const d = await doctor();
    expect(failed(d)).toEqual([]);
    expect(d.code).toBe(0);
    expect(row(d, 'agent')?.status).toBe('warn');
    // --network-policy is off: its row is the only one not checked.
    expect(d.rows.filter((r) => r.status === 'skip').map((r) => r.id)).toEqual(['network-policy']);
    expect(row(d, 'kube-proxy')?.saw).toContain(`--network-name=${NET}`);
    let table = '';
    const code = await command.run([...node.args, ...health()], {
      stdout: (t) => void (table += t),
      stderr: () => undefined,
      env: { NODE_NAME: NODE },
      platform: 'linux',
    });
    expect(code).toBe(0);
    expect(table).toMatch(/^ok {4}hns-network/m);
    expect(table).toContain('all checks passed');
  });

  // Each fault: stage it on the restored healthy node; exactly `check` fails.
  const FAULTS: { check: string; what: string; stage: () => void | Promise<void>; undo?: () => void }[] = [
    {
      check: 'hns-network',
      what: 'the HNS network is gone (Remove-HnsNetwork, HNS restart)',
      stage: () => void editState(sim(), (s) => void (s.networks = s.networks.filter((n) => n.Name !== NET))),
    },
    {
      check: 'hns-network-type',
      what: 'the network is an L2Bridge',
      stage: () => editState(sim(), (s) => void (s.networks.find((n) => n.Name === NET)!.Type = 'L2Bridge')),
    },
    {
      check: 'hns-subnet',
      what: "the network's subnet is not the lease",
      stage: () => editState(sim(), (s) => void (s.networks.find((n) => n.Name === NET)!.Ipams![0].Subnets![0].IpAddressPrefix = '10.244.9.0/24')),
    },
    {
      check: 'vtep-mac',
      what: 'the DR MAC is not the published VtepMAC',
      stage: () =>
        editState(sim(), (s) => {
          const p = s.networks.find((n) => n.Name === NET)!.Policies!.find((x) => x.Type === 'DrMacAddress')!;
          p.Settings = { Address: '00-15-5D-99-99-99' };
        }),
    },
    {
      check: 'source-vip',
      what: 'the source VIP endpoint is gone',
      stage: () => editState(sim(), (s) => void (s.endpoints = s.endpoints.filter((e) => e.Name !== `${NET}_sourcevip`))),
    },
    { check: 'source-vip-file', what: 'the source VIP file names another address', stage: () => writeFileSync(paths().vip, JSON.stringify({ ip: '10.244.7.99' })) },
    {
      check: 'peers',
      what: 'the peer policy is missing and a stale one is there',
      stage: () =>
        editState(sim(), (s) => {
          const net = s.networks.find((n) => n.Name === NET)!;
          const p = net.Policies!.find((x) => x.Type === 'RemoteSubnetRoute')!;
          p.Settings = { ...p.Settings, DestinationPrefix: '10.244.99.0/24' };
        }),
    },
    {
      check: 'subnet-env',
      what: 'subnet.env names another subnet',
      stage: () => writeFileSync(paths().subnetFile, readFileSync(paths().subnetFile, 'utf8').replace('FLANNEL_SUBNET=10.244.7.1/24', 'FLANNEL_SUBNET=10.244.8.1/24')),
    },
    { check: 'cni-conflist', what: 'no conflist', stage: () => rmSync(paths().conf, { recursive: true }) },
    { check: 'cni-network-name', what: 'the conflist names another network', stage: () => writeCni((c) => void (c.name = 'cbr0')) },
    {
      check: 'cni-subnet-file',
      what: "the conflist's subnetFile is not the agent's",
      stage: () => writeCni((c) => void ((c.plugins as Record<string, unknown>[])[0].subnetFile = 'C:\\run\\flannel\\subnet.env')),
    },
    {
      check: 'cni-outbound-nat',
      what: 'the Service CIDR is not excepted from NAT',
      stage: () =>
        writeCni((c) => {
          const d = (c.plugins as { delegate: { policies: { value: { Type: string; Settings: Record<string, unknown> } }[] } }[])[0].delegate;
          d.policies.find((p) => p.value.Type === 'OutBoundNAT')!.value.Settings = { Exceptions: ['10.244.0.0/16'] };
        }),
    },
    { check: 'cni-plugins', what: 'a plugin is missing', stage: () => unlinkSync(join(paths().bin, 'win-overlay.exe')) },
    {
      check: 'cni-pins',
      what: 'a plugin differs from what install-cni wrote',
      stage: () => writeFileSync(join(paths().bin, 'flannel.exe'), 'MZ replaced'),
    },
    {
      check: 'adapter-ip',
      what: 'the adapter fell back to APIPA',
      stage: () => editState(sim(), (s) => void (s.adapters.find((a) => a.IPAddress === WIN_IP)!.IPAddress = '169.254.12.34')),
    },
    { check: 'mtu', what: "subnet.env's MTU does not fit the adapter", stage: () => editState(sim(), (s) => void (s.adapters.find((a) => a.IPAddress === WIN_IP)!.Mtu = 9000)) },
    { check: 'ipam-leaks', what: 'a crashed pod left its reservation', stage: () => void reserve('10.244.7.50', 3600) },
    { check: 'ipam-gateway', what: "the source VIP's reservation is gone", stage: () => rmSync(join(paths().ipam, NET, '10.244.7.2')) },
    {
      check: 'hns-version',
      what: 'net-conf asks for VXLAN port 8472 on a Windows Server 2019 node (HNS 9.3; the VxlanPort policy needs 10.3)',
      stage: () => {
        writeFileSync(node.paths.netConf, JSON.stringify({ ...VXLAN_NET_CONF, Backend: { ...VXLAN_NET_CONF.Backend, Port: 8472 } }));
        editState(sim(), (s) => void (s.hnsVersion = '9.3'));
      },
    },
    {
      check: 'node-condition',
      what: 'the Node is NetworkUnavailable',
      stage: () =>
        void node.cluster.api.updateNode(NODE, (n) => {
          n.status!.conditions = [
            ...(n.status!.conditions ?? []).filter((c) => c.type !== 'NetworkUnavailable'),
            { type: 'NetworkUnavailable', status: 'True', reason: 'NoRouteCreated', message: 'x' },
          ];
        }),
      undo: () => void node.cluster.api.updateNode(NODE, (n) => void (n.status!.conditions = (n.status!.conditions ?? []).filter((c) => c.type !== 'NetworkUnavailable'))),
    },
    {
      check: 'cluster-vni',
      what: 'a Linux node runs VNI 1',
      stage: () => void node.cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'vxlan', vni: 1 })),
      undo: () => void node.cluster.api.deleteNode('linux-2'),
    },
  ];

  it.each(FAULTS)('$check fails, and only it, when $what', async ({ check, stage, undo }) => {
    node.restore();
    await stage();
    try {
      const d = await doctor();
      if (failed(d).join() !== check) console.log(JSON.stringify(d.rows, null, 1));
      expect(failed(d)).toEqual([check]);
      expect(row(d, check)?.fix).not.toBe('');
      expect(d.code).toBe(1);
    } finally {
      undo?.();
    }
  });

  // What degrades the node without breaking a hop: that row warns, nothing fails (exit 0).
  const WARNINGS: { check: string; what: string; stage: () => void; args?: string[] }[] = [
    {
      check: 'hns-adapter',
      what: 'the network names no adapter',
      stage: () =>
        editState(
          sim(),
          (s) => void (s.networks.find((n) => n.Name === NET)!.Policies = s.networks.find((n) => n.Name === NET)!.Policies!.filter((p) => p.Type !== 'NetAdapterName')),
        ),
    },
    { check: 'cni-data-dir', what: "the conflist's dataDir is upstream's default", stage: () => writeCni((c) => void delete (c.plugins as Record<string, unknown>[])[0].dataDir) },
    {
      check: 'cni-loopback-dsr',
      what: 'loopbackDSR is off',
      stage: () => writeCni((c) => void ((c.plugins as { delegate: Record<string, unknown> }[])[0].delegate.loopbackDSR = false)),
    },
    { check: 'lease', what: 'only subnet.env tells the lease (no agent, no API access)', stage: () => undefined, args: ['--no-cluster'] },
  ];

  it.each(WARNINGS)('$check warns, and nothing fails, when $what', async ({ check, stage, args }) => {
    node.restore();
    stage();
    const d = await doctor(args);
    expect(failed(d)).toEqual([]);
    expect(row(d, check)?.status).toBe('warn');
    expect(d.code).toBe(0);
  });

  it('--fix frees a leaked reservation older than the grace period, never a young one, the source VIP or the gateway', async () => {
    node.restore();
    const old = reserve('10.244.7.50', 3600);
    const young = reserve('10.244.7.51', 0);
    const vip = join(paths().ipam, NET, '10.244.7.2');
    const d = await doctor(['--fix', '--grace-period=600']);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(young)).toBe(true);
    expect(existsSync(vip)).toBe(true);
    expect((JSON.parse(d.stdout) as { freed: { ip: string }[] }).freed.map((x) => x.ip)).toEqual(['10.244.7.50']);
    // The young one may be a pod being added: named, not a failure.
    expect(failed(d)).toEqual([]);
    expect(row(d, 'ipam-leaks')?.saw).toContain('1 younger than 600 s without an endpoint yet (a pod being added)');
    unlinkSync(young);
    expect((await doctor(['--fix'])).code).toBe(0);
  });

  it("a reservation one second old (a pod being added) fails nothing under the default grace period; past it, the fix line's --fix frees it", async () => {
    node.restore();
    const adding = reserve('10.244.7.60', 1);
    const d = await doctor();
    expect(failed(d)).toEqual([]);
    expect(d.code).toBe(0);
    // The pod ADD died: an hour on, the row fails and its fix line, run as it says, frees it.
    const t = (Date.now() - 3_600_000) / 1000;
    utimesSync(adding, t, t);
    const leaked = await doctor();
    expect(failed(leaked)).toEqual(['ipam-leaks']);
    const fix = row(leaked, 'ipam-leaks')!.fix;
    expect(fix).toMatch(/^run flanneld doctor --fix --grace-period=600:/);
    await doctor(
      fix
        .replace(/^run flanneld doctor /, '')
        .split(':')[0]
        .split(' '),
    );
    expect(existsSync(adding)).toBe(false);
    expect(failed(await doctor())).toEqual([]);
  });

  /** Start the agent and wait for it in sync (its /status). */
  async function agentInSync(before?: (sim: SimulatedDataplane) => void): Promise<RunningAgent> {
    const agent = await runAgent(before);
    await waitFor(async () => (await agentStatus())?.inSync, 'the agent in sync', 30_000);
    // In sync, the agent writes NetworkUnavailable=False on its Node (a PATCH of its own, which a loaded
    // machine may see after /status turns in sync): the node-condition row reads the Node.
    const condition = () =>
      (node.cluster.api.getNode(NODE)?.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions?.find((c) => c.type === 'NetworkUnavailable');
    await waitFor(() => condition()?.status === 'False', "the agent's NetworkUnavailable=False", 30_000);
    return agent;
  }
  const agentStatus = async () => {
    const r = await fetch(`http://127.0.0.1:${healthPort}/status`).catch(() => undefined);
    return r?.ok ? ((await r.json()) as StatusReport) : undefined;
  };

  it("fails when the own Node is deleted, says why the agent is not in sync, and the fix line's kubelet re-registration clears it", async () => {
    node.restore();
    node.cluster.api.updateNode(NODE, (n) => void (n.status!.conditions = [{ type: 'NetworkUnavailable', status: 'True', reason: 'NodeStarting', message: '' }]));
    const agent = await agentInSync();
    try {
      // Once this agent has marked its Node (a Node deleted while it patches the condition stops the agent: a 404 it does not survive).
      await waitFor(() => node.cluster.api.getNode(NODE)?.status?.conditions?.some((c) => c.type === 'NetworkUnavailable' && c.status === 'False'), 'NetworkUnavailable False');
      node.cluster.api.deleteNode(NODE);
      await waitFor(() => !agent.agent.isReady, 'not ready once the own Node is deleted');
      await waitFor(async () => (await agentStatus())?.ownNode, "the agent's /status names the deleted Node");
      const d = await doctor();
      expect(failed(d)).toEqual(['node-condition']);
      expect(row(d, 'node-condition')?.saw).toContain('deleted from the API server');
      expect(row(d, 'agent')?.saw).toContain('its Node is deleted from the API server');
      // The fix line: the kubelet registers the Node again (as it does when it starts).
      expect(row(d, 'node-condition')?.fix).toBe('restart the kubelet on this node: it registers the Node again');
      node.cluster.api.addNode(bareNode({ name: NODE, podCIDR: SUBNET, internalIP: WIN_IP }));
      await waitFor(async () => (await agentStatus())?.inSync, 'the agent in sync with the Node back');
      const again = await doctor();
      expect(failed(again)).toEqual([]);
      expect(row(again, 'agent')?.status).toBe('ok');
    } finally {
      await agent.stop();
      if (!node.cluster.api.getNode(NODE)) node.cluster.api.addNode(bareNode({ name: NODE, podCIDR: SUBNET, internalIP: WIN_IP }));
    }
  }, 60_000);

  it("another CNI's config sorting first: the cni-conflist row says to move it aside, and once it is, doctor passes", async () => {
    node.restore();
    // containerd's own default Windows network (its install docs' 0-containerd-nat.json): network "nat", plugin nat.
    const nat = join(paths().conf, '0-containerd-nat.json');
    writeFileSync(nat, JSON.stringify({ cniVersion: '0.2.0', name: 'nat', type: 'nat', master: 'Ethernet', ipam: { subnet: '172.21.208.0/20' } }));
    const d = await doctor();
    expect(failed(d)).toEqual(['cni-conflist']);
    const fix = row(d, 'cni-conflist')!.fix;
    expect(fix).toContain(`rename it to ${nat}.bak`);
    expect(fix).not.toContain('Backend.Name');
    renameSync(nat, `${nat}.bak`);
    expect(failed(await doctor())).toEqual([]);
  });

  it('NetworkUnavailable True: without the agent the fix is to start it; set by the agent for a CNI problem, to fix that problem; each done, the row passes', async () => {
    node.restore();
    node.cluster.api.updateNode(NODE, (n) => {
      n.status!.conditions = [
        ...(n.status!.conditions ?? []).filter((c) => c.type !== 'NetworkUnavailable'),
        { type: 'NetworkUnavailable', status: 'True', reason: 'NoRouteCreated', message: 'x' },
      ];
    });
    const d = await doctor();
    expect(failed(d)).toEqual(['node-condition']);
    expect(row(d, 'node-condition')?.fix).toBe('start flanneld: it sets NetworkUnavailable False once its network is up');
    const condition = () => node.cluster.api.getNode(NODE)!.status!.conditions!.find((c) => c.type === 'NetworkUnavailable');
    let agent = await agentInSync();
    await agent.stop();
    expect(failed(await doctor())).toEqual([]);

    // The agent sets it True itself while its CNI check fails (a conflist naming another network).
    writeCni((c) => void (c.name = 'cbr0'));
    agent = await runAgent(undefined, [`--cni-conf-dir=${paths().conf}`, `--cni-bin-dir=${paths().bin}`]);
    try {
      await waitFor(() => condition()?.reason === 'CNINetworkNameMismatch', 'the agent reports the CNI problem on its Node');
      const broken = await doctor();
      expect(row(broken, 'node-condition')?.fix).toBe('fix what the message says (the cni-* rows); flanneld sets NetworkUnavailable False once a pod can start');
      writeCni();
      await waitFor(() => condition()?.status === 'False', 'the agent clears the condition');
      expect(failed(await doctor())).toEqual([]);
    } finally {
      await agent.stop();
    }
  }, 60_000);

  it("peers: one the agent's validation rejects is named, not a failure no restart fixes; one missing while no agent runs is the agent's to write, and starting it does", async () => {
    node.restore();
    node.cluster.api.addNode(linuxFlannelNode({ name: 'linux-ll', podCIDR: '10.244.4.0/24', publicIP: '169.254.0.9', backendType: 'vxlan' }));
    try {
      const d = await doctor();
      expect(failed(d)).toEqual([]);
      expect(row(d, 'peers')?.saw).toContain('1 peer(s) rejected by flanneld');
      expect(row(d, 'peers')?.saw).toContain('linux-ll');
    } finally {
      node.cluster.api.deleteNode('linux-ll');
    }
    editState(sim(), (s) => {
      const net = s.networks.find((n) => n.Name === NET)!;
      net.Policies = net.Policies!.filter((p) => p.Type !== 'RemoteSubnetRoute');
    });
    const missing = await doctor();
    expect(failed(missing)).toEqual(['peers']);
    expect(row(missing, 'peers')?.fix).toBe("start flanneld: it writes exactly the peers' set");
    const agent = await agentInSync();
    await agent.stop();
    expect(failed(await doctor())).toEqual([]);
  }, 60_000);

  it('peers: contested subnets are settled as the agent settles them (the older Node keeps one; a tie goes to the name that sorts first), so doctor expects no route the agent rightly leaves out', async () => {
    node.restore();
    // The rule is the peer store's (src/peers/store.ts, with src/subnet/lease.ts claimsFirst): Node
    // metadata.creationTimestamp decides who holds a podCIDR two Nodes claim. linux-1 (added when the cluster
    // started) keeps 10.244.1.0/24 against a younger Node; of two Nodes created in the same second that both
    // claim 10.244.5.0/24, linux-a keeps it and linux-b is rejected.
    const later = kubeTime(Date.now() + 3_600_000);
    const contested = [
      { name: 'linux-late', podCIDR: PEER, publicIP: '10.0.0.12', created: later },
      { name: 'linux-a', podCIDR: '10.244.5.0/24', publicIP: '10.0.0.13', created: later },
      { name: 'linux-b', podCIDR: '10.244.5.0/24', publicIP: '10.0.0.14', created: later },
    ];
    const rejected = contested.filter((c) => c.name !== 'linux-a');
    for (const c of contested) {
      const n = linuxFlannelNode({ name: c.name, podCIDR: c.podCIDR, publicIP: c.publicIP, backendType: 'vxlan' });
      n.metadata.creationTimestamp = c.created;
      node.cluster.api.addNode(n);
    }
    try {
      const agent = await agentInSync();
      try {
        await waitFor(async () => (await agentStatus())?.peers.rejected === rejected.length, "the agent's /status names the contested peers");
        const d = await doctor();
        expect(failed(d)).toEqual([]);
        expect(row(d, 'peers')?.status).toBe('ok');
        for (const c of rejected) expect(row(d, 'peers')?.saw).toContain(c.name);
        expect(row(d, 'peers')?.saw).not.toContain('linux-a');
      } finally {
        await agent.stop();
      }
      // What the agent left is what doctor expects without it too.
      const stopped = await doctor();
      expect(failed(stopped)).toEqual([]);
      expect(row(stopped, 'peers')?.saw).toContain('2 peer(s) rejected by flanneld');
    } finally {
      for (const c of contested) node.cluster.api.deleteNode(c.name);
    }
  }, 60_000);

  it('net-conf.json changed under the running agent: a warning that a restart rebuilds the network, no restart advice elsewhere; put back, it passes', async () => {
    node.restore();
    const agent = await agentInSync();
    try {
      const path = node.paths.netConf;
      const running = readFileSync(path, 'utf8');
      writeFileSync(path, JSON.stringify({ ...VXLAN_NET_CONF, Backend: { ...VXLAN_NET_CONF.Backend, VNI: 4097 } }));
      const d = await doctor();
      expect(failed(d)).toEqual([]);
      expect(row(d, 'net-conf')).toMatchObject({ status: 'warn' });
      expect(row(d, 'net-conf')?.saw).toContain('Backend.VNI 4096 -> 4097');
      expect(row(d, 'peers')?.status).toBe('skip');
      expect(d.rows.filter((r) => r.id !== 'net-conf' && /restart flanneld/.test(r.fix))).toEqual([]);
      // The fix line's first way: put it back.
      writeFileSync(path, running);
      const again = await doctor();
      expect(again.rows.filter((r) => r.status !== 'ok').map((r) => r.id)).toEqual(['network-policy']);
    } finally {
      await agent.stop();
    }
  }, 60_000);

  it('a torn reservation (zero-filled by a power loss) names no container, as the agent reads it, and --fix frees it', async () => {
    node.restore();
    const torn = reserve('10.244.7.52', 3600, Buffer.alloc(16));
    expect(row(await doctor(), 'ipam-leaks')?.saw).toMatch(/10\.244\.7\.52 \(empty, \d+ s old\)/);
    const d = await doctor(['--fix']);
    expect(existsSync(torn)).toBe(false);
    expect((JSON.parse(d.stdout) as { freed: { ip: string; owner: string }[] }).freed).toMatchObject([{ ip: '10.244.7.52', owner: '' }]);
    expect(d.code).toBe(0);
  });

  it('names the peer HNS refuses, from the running agent', async () => {
    node.restore();
    // HCN_E_ADDR_INVALID_OR_RESERVED on the peer's policy, which the restart must write again (src/simulator/faults.ts).
    const agent = await runAgent((s) =>
      editState(s, (st) => {
        st.faults = [{ op: 'HcnModifyNetwork', match: PEER, hresult: '0x803B002F', remaining: -1 }];
        const net = st.networks.find((n) => n.Name === NET)!;
        net.Policies = net.Policies!.filter((p) => p.Type !== 'RemoteSubnetRoute');
      }),
    );
    try {
      await waitFor(async () => {
        const r = await fetch(`http://127.0.0.1:${healthPort}/status`).catch(() => undefined);
        return r?.ok && ((await r.json()) as { peers: { refused: number } }).peers.refused > 0;
      }, 'the refusal in /status');
      const d = await doctor();
      expect(failed(d)).toEqual(['peers']);
      expect(row(d, 'peers')?.saw).toContain(`linux-1 ${PEER}`);
      expect(row(d, 'peers')?.saw).toContain('0x803B002F');
    } finally {
      await agent.stop();
    }
  }, 30_000);

  // `kubectl exec ... flanneld doctor` in the DaemonSet pod (deploy/README.md) runs with the pod's ServiceAccount:
  // the fake API server grants only what deploy/base/10-rbac.yml binds it to, as RBAC resolves it (its
  // ClusterRole everywhere, its Role in kube-flannel: ../support/deploy-rbac.ts, src/demo/kube-fake/rbac-startup.ts).
  it("in the DaemonSet pod, with only the manifest's RBAC, cluster-vni reads the Linux flannel ConfigMap and compares its VXLAN port", async () => {
    node.restore();
    const api = node.cluster.api;
    /** The Linux manifest's kube-flannel-cfg (flannel Documentation/kube-flannel.yml), moved to VNI 4096 with `port` if given. */
    const linuxConfigMap = (port?: number) =>
      api.applyConfigMap({
        metadata: { name: 'kube-flannel-cfg', namespace: 'kube-flannel', labels: { app: 'flannel', 'k8s-app': 'flannel', tier: 'node' } },
        data: {
          'cni-conf.json':
            '{"name":"cbr0","cniVersion":"0.3.1","plugins":[{"type":"flannel","delegate":{"hairpinMode":true,"isDefaultGateway":true}},{"type":"portmap","capabilities":{"portMappings":true}}]}',
          'net-conf.json': JSON.stringify({
            Network: '10.244.0.0/16',
            EnableNFTables: false,
            Backend: { Type: 'vxlan', VNI: 4096, ...(port === undefined ? {} : { Port: port }) },
          }),
        },
      });
    const { rules, namespaced } = daemonSetRbac();
    try {
      api.rbacRules = rules;
      api.rbacNamespacedRules = namespaced;
      // No Port: Linux flanneld uses the kernel's 8472 (flannel pkg/backend/vxlan), ours is 4789.
      linuxConfigMap();
      let d = await doctor();
      expect(failed(d)).toEqual(['cluster-vni']);
      expect(row(d, 'cluster-vni')?.saw).toContain('the Linux net-conf (kube-flannel/kube-flannel-cfg) has Port 8472, ours 4789');
      linuxConfigMap(4789);
      d = await doctor();
      expect(row(d, 'cluster-vni')).toMatchObject({ status: 'ok', saw: '1 Linux vxlan node(s) on VNI 4096, port 4789' });
      // Not vacuous: without the Role the ConfigMap is forbidden, and the port is not compared.
      api.rbacNamespacedRules = {};
      d = await doctor();
      expect(row(d, 'cluster-vni')).toMatchObject({ status: 'ok', saw: expect.stringContaining('the Linux ConfigMap is not readable') });
    } finally {
      api.rbacRules = undefined;
      api.rbacNamespacedRules = {};
    }
  });

  it('exits 2 on bad usage', async () => {
    const d = await doctor(['--grace-period=-1']);
    expect(d.code).toBe(2);
    expect((await doctor(['--no-such-flag'])).code).toBe(2);
  });
});

describe('flanneld doctor on a simulated host-gw node', () => {
  const NAME = 'cbr0';
  let node: DoctorNode;
  const ipamDir = () => node.paths.ipam;

  async function doctor(): Promise<CheckRow[]> {
    const { code, rows } = await node.doctor(node.args);
    expect(code).toBe(rows.some((r) => r.status === 'fail') ? 1 : 0);
    return rows;
  }
  const failedIds = (rows: CheckRow[]) => rows.filter((r) => r.status === 'fail').map((r) => r.id);

  beforeAll(async () => {
    node = await DoctorNode.start('host-gw');
    const { conf, bin, subnetFile } = node.paths;
    const agent = node.startAgent();
    await waitFor(
      () => existsSync(subnetFile) && existsSync(join(ipamDir(), NAME, '10.244.7.2')) && agent.sim.snapshot().routes.some((r) => r.DestinationPrefix === PEER),
      'the host-gw node set up (subnet.env follows the complete list)',
    );
    await agent.stop();
    mkdirSync(conf, { recursive: true });
    mkdirSync(bin, { recursive: true });
    const rendered = renderCniConfig({
      netConf: parseNetConf(JSON.stringify(HOSTGW_NET_CONF)),
      subnetFile,
      dataDir: join(node.dir, 'flannel'),
      serviceCidr: '10.96.0.0/12',
      managementSubnet: '10.0.0.0/24',
      managementIP: WIN_IP,
      dnsServers: ['10.96.0.10'],
      dnsSearch: ['svc.cluster.local'],
    });
    writeFileSync(join(conf, '10-flannel.conflist'), JSON.stringify(rendered));
    for (const f of ['flannel.exe', 'win-bridge.exe', 'host-local.exe']) writeFileSync(join(bin, f), 'MZ');
    node.keep();
  }, 60_000);

  afterAll(() => node.stop());
  const sim = () => node.sim();

  it('passes on the healthy node', async () => {
    node.restore();
    const rows = await doctor();
    expect(rows.filter((r) => r.status !== 'ok').map((r) => `${r.id} ${r.status}`)).toEqual(['agent warn', 'cni-pins skip', 'network-policy skip']);
    expect(rows.find((r) => r.id === 'host-endpoint')?.saw).toBe(`${NAME}_ep at 10.244.7.2`);
  });

  const FAULTS: { check: string; what: string; stage: () => void }[] = [
    { check: 'host-endpoint', what: 'the host endpoint is gone', stage: () => editState(sim(), (s) => void (s.endpoints = s.endpoints.filter((e) => e.Name !== `${NAME}_ep`))) },
    { check: 'peers', what: "the peer's route is gone", stage: () => editState(sim(), (s) => void (s.routes = s.routes.filter((r) => r.DestinationPrefix !== PEER))) },
    {
      check: 'peers',
      what: 'a route to a subnet no peer has is there',
      stage: () =>
        editState(sim(), (s) => {
          const r = s.routes.find((x) => x.DestinationPrefix === PEER)!;
          s.routes.push({ ...r, DestinationPrefix: '10.244.200.0/24' });
        }),
    },
    { check: 'ipam-gateway', what: "the bridge endpoint's reservation is gone", stage: () => rmSync(join(ipamDir(), NAME, '10.244.7.2')) },
  ];

  it.each(FAULTS)('$check fails, and only it, when $what', async ({ check, stage }) => {
    node.restore();
    stage();
    expect(failedIds(await doctor())).toEqual([check]);
  });
});
