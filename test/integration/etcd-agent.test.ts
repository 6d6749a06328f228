// The whole agent in etcd mode (no --kube-subnet-mgr) on the simulated dataplane against a real etcd
// (Debian's etcd-server, started per suite): agents sharing one etcd program each other.
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Etcd3 } from 'etcd3';
import { parseConfig } from '../../src/config/parse.js';
import { EtcdError } from '../../src/basics/errors.js';
import { runAgent, waitFor, type RunningAgent } from '../support/cluster.js';
import { describeEtcd, EtcdServer } from '../support/etcd.js';

interface EtcdAgent extends RunningAgent {
  name: string;
  ip: string;
}

interface PolicySettings {
  DestinationPrefix: string;
  ProviderAddress: string;
  IsolationId: number;
  DistributedRouterMacAddress: string;
}

const VXLAN = { Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } };
const HOSTGW = { Network: '10.5.0.0/16', Backend: { Type: 'host-gw' } };

function policies(a: EtcdAgent): PolicySettings[] {
  const state = a.sim.snapshot();
  const net = state.networks.find((n) => n.Name === a.agent.network?.networkName);
  return (net?.Policies ?? [])
    .filter((p) => p.Type === 'RemoteSubnetRoute')
    .map((p) => p.Settings as unknown as PolicySettings)
    .sort((x, y) => x.DestinationPrefix.localeCompare(y.DestinationPrefix));
}

function peerRoutes(a: EtcdAgent): string[] {
  return a.sim
    .snapshot()
    .routes.filter((r) => r.DestinationPrefix.startsWith('10.5.'))
    .map((r) => `${r.DestinationPrefix} via ${r.NextHop}`)
    .sort();
}

function ownSubnet(a: EtcdAgent): string {
  return a.agent.network!.lease.subnet;
}

describeEtcd('the agent in etcd mode (real etcd, simulated dataplane)', () => {
  const etcd = new EtcdServer();
  const dir = mkdtempSync(join(tmpdir(), 'flanneld-etcd-agent-'));
  let admin: Etcd3;
  let seq = 0;
  let agents: EtcdAgent[] = [];

  beforeAll(async () => {
    await etcd.start();
    admin = etcd.client();
  }, 30_000);

  afterEach(async () => {
    for (const a of agents) await a.stop();
    agents = [];
  }, 20_000);

  afterAll(async () => {
    await etcd.destroy();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  /** A fresh `--etcd-prefix` holding `conf` at `<prefix>/config`. */
  async function newPrefix(conf: unknown): Promise<string> {
    const prefix = `/agent${++seq}/network`;
    await admin.put(`${prefix}/config`).value(JSON.stringify(conf));
    return prefix;
  }

  /** Start an agent whose files live in `<dir>/<prefix>/<name>/` (so a restart reuses them). */
  function startAgent(prefix: string, name: string, ip: string): EtcdAgent {
    const home = join(dir, prefix.replace(/\//g, '_'), name);
    mkdirSync(home, { recursive: true });
    const subnetFile = join(home, 'run', 'flannel', 'subnet.env');
    const statePath = join(home, 'dataplane.json');
    const parsed = parseConfig(
      [
        `--etcd-endpoints=${etcd.endpoint}`,
        `--etcd-prefix=${prefix}`,
        '--dataplane=simulated',
        `--dataplane-state=${statePath}`,
        `--subnet-file=${subnetFile}`,
        `--iface=${ip}`,
        '--ip-masq',
      ],
      {},
      { platform: 'linux' },
    );
    const a: EtcdAgent = { ...runAgent(parsed, { dir: home, subnetFile, statePath }), name, ip };
    agents.push(a);
    return a;
  }

  /** The value of an agent's own lease key in etcd, decoded. */
  async function leaseValue(prefix: string, a: EtcdAgent): Promise<{ PublicIP: string; BackendType: string; BackendData?: { VNI: number; VtepMAC: string } }> {
    const raw = await admin.get(`${prefix}/subnets/${a.agent.network!.lease.key}`).string();
    if (raw === null) throw new Error(`no lease for ${a.name}`);
    return JSON.parse(raw) as { PublicIP: string; BackendType: string; BackendData?: { VNI: number; VtepMAC: string } };
  }

  /** What `a` must program for its peers under vxlan: one policy per peer, VtepMAC from the peer's etcd value. */
  async function expectedPolicies(prefix: string, a: EtcdAgent, all: EtcdAgent[]): Promise<PolicySettings[]> {
    const out: PolicySettings[] = [];
    for (const p of all) {
      if (p === a) continue;
      const v = await leaseValue(prefix, p);
      expect(v.PublicIP).toBe(p.ip);
      out.push({ DestinationPrefix: ownSubnet(p), ProviderAddress: p.ip, IsolationId: 4096, DistributedRouterMacAddress: v.BackendData!.VtepMAC });
    }
    return out.sort((x, y) => x.DestinationPrefix.localeCompare(y.DestinationPrefix));
  }

  it('vxlan: two agents get distinct subnets and program each other; a third joins and all three converge', async () => {
    const prefix = await newPrefix(VXLAN);
    const a = startAgent(prefix, 'a', '10.0.0.2');
    const b = startAgent(prefix, 'b', '10.0.0.3');
    await waitFor(() => policies(a).length === 1 && policies(b).length === 1 && a.agent.isReady && b.agent.isReady, 'two agents programming each other', 15_000);
    expect(ownSubnet(a)).not.toBe(ownSubnet(b));
    for (const x of [a, b]) {
      expect(ownSubnet(x)).toMatch(/^10\.5\.\d+\.0\/24$/);
      const v = await leaseValue(prefix, x);
      expect(v).toMatchObject({ PublicIP: x.ip, BackendType: 'vxlan', BackendData: { VNI: 4096 } });
      expect(v.BackendData!.VtepMAC).toMatch(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
      const netIP = ownSubnet(x).split('/')[0].replace(/\.0$/, '.1');
      expect(readFileSync(x.subnetFile, 'utf8')).toBe(`FLANNEL_NETWORK=10.5.0.0/16\nFLANNEL_SUBNET=${netIP}/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n`);
    }
    expect(policies(a)).toEqual(await expectedPolicies(prefix, a, [a, b]));
    expect(policies(b)).toEqual(await expectedPolicies(prefix, b, [a, b]));

    const c = startAgent(prefix, 'c', '10.0.0.4');
    const all = [a, b, c];
    await waitFor(() => all.every((x) => x.agent.isReady && policies(x).length === 2), 'three agents with two policies each', 15_000);
    expect(new Set(all.map(ownSubnet)).size).toBe(3);
    for (const x of all) expect(policies(x)).toEqual(await expectedPolicies(prefix, x, all));
    expect(await admin.getAll().prefix(`${prefix}/subnets/`).keys()).toHaveLength(3);
  }, 40_000);

  it('host-gw: three agents get distinct subnets and one route per peer via its public IP', async () => {
    const prefix = await newPrefix(HOSTGW);
    const all = [startAgent(prefix, 'a', '10.0.0.2'), startAgent(prefix, 'b', '10.0.0.3'), startAgent(prefix, 'c', '10.0.0.4')];
    await waitFor(() => all.every((x) => x.agent.isReady && peerRoutes(x).length === 2), 'two peer routes on every agent', 15_000);
    expect(new Set(all.map(ownSubnet)).size).toBe(3);
    for (const x of all) {
      expect(peerRoutes(x)).toEqual(
        all
          .filter((p) => p !== x)
          .map((p) => `${ownSubnet(p)} via ${p.ip}`)
          .sort(),
      );
      expect(await leaseValue(prefix, x)).toEqual({ PublicIP: x.ip, PublicIPv6: null, BackendType: 'host-gw' });
    }
  }, 40_000);

  it('a lease written by the test in upstream format is programmed as a peer, and removed when deleted', async () => {
    // SubnetMax keeps the agent's random lease (one of the first 100 free: src/subnet/etcd/allocate.ts) off the key written below.
    const prefix = await newPrefix({ ...VXLAN, SubnetMax: '10.5.50.0' });
    const a = startAgent(prefix, 'a', '10.0.0.2');
    await waitFor(() => a.agent.isReady, 'the agent to be ready', 15_000);
    expect(policies(a)).toEqual([]);

    const grant = await admin.leaseClient.leaseGrant({ TTL: 86400 });
    const key = `${prefix}/subnets/10.5.77.0-24`;
    await admin.put(key).value('{"PublicIP":"10.0.0.77","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"c6:d2:32:6f:8f:44"}}').lease(grant.ID);
    await waitFor(() => policies(a).length === 1, 'the upstream lease as a policy');
    expect(policies(a)).toEqual([{ DestinationPrefix: '10.5.77.0/24', ProviderAddress: '10.0.0.77', IsolationId: 4096, DistributedRouterMacAddress: 'c6:d2:32:6f:8f:44' }]);

    await admin.delete().key(key);
    await waitFor(() => policies(a).length === 0, 'the policy to go with the lease');
  }, 30_000);

  it('a restarted agent reuses its subnet and keeps its HNS network (same ID)', async () => {
    const prefix = await newPrefix(VXLAN);
    let a = startAgent(prefix, 'a', '10.0.0.2');
    const b = startAgent(prefix, 'b', '10.0.0.3');
    await waitFor(() => policies(a).length === 1 && policies(b).length === 1, 'two agents programming each other', 15_000);
    const subnet = ownSubnet(a);
    const before = a.sim.snapshot();
    const id = before.networks.find((n) => n.Name === a.agent.network!.networkName)!.ID;
    const value = await leaseValue(prefix, a);
    await a.stop();
    agents = agents.filter((x) => x !== a);

    a = startAgent(prefix, 'a', '10.0.0.2');
    await waitFor(() => a.agent.isReady && policies(a).length === 1, 'the restarted agent', 15_000);
    expect(ownSubnet(a)).toBe(subnet);
    const nets = a.sim.snapshot().networks;
    expect(nets).toHaveLength(1);
    expect(nets[0].ID).toBe(id);
    expect(await leaseValue(prefix, a)).toEqual(value);
    expect(await admin.getAll().prefix(`${prefix}/subnets/`).keys()).toHaveLength(2);
    expect(policies(a)).toEqual(await expectedPolicies(prefix, a, [a, b]));
    expect(policies(b)).toEqual(await expectedPolicies(prefix, b, [a, b]));
  }, 40_000);

  it("deleting an agent's own key makes run() reject with FLANNEL_ERR_LEASE_REVOKED", async () => {
    const prefix = await newPrefix(VXLAN);
    const a = startAgent(prefix, 'a', '10.0.0.2');
    await waitFor(() => a.agent.isReady, 'the agent to be ready', 15_000);
    await admin.delete().key(`${prefix}/subnets/${a.agent.network!.lease.key}`);
    const err = await Promise.race([
      a.done.then(
        () => 'resolved',
        (e: unknown) => e,
      ),
      new Promise((r) => setTimeout(() => r('still running after 10 s'), 10_000).unref()),
    ]);
    expect(err).toBeInstanceOf(EtcdError);
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_LEASE_REVOKED', context: { key: a.agent.network!.lease.key } });
  }, 30_000);
});
