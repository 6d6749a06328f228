// host-gw on Windows: an L2Bridge HNS network (HNS v1), a host endpoint at .2, forwarding on both vNICs,
// and one route per peer on the management vNIC. Mirrors flannel pkg/backend/hostgw/hostgw_windows.go,
// but reuses a matching network and endpoint, and sweeps stale routes (upstream never does: flannel#2554).
// Beside the network it keeps the record of the routes it created (./route-record.ts, beside subnet.env)
// and the host endpoint's address reserved in host-local's store (the network's `settle`).
import { poll, type Backend, type BackendDeps, type Network } from '../backend.js';
import { releaseOwnReservations, reserveAddressOrWarn } from '../ipam-reservation.js';
import { RouteNetwork, type HnsObjectKind, type NetworkBinding, type NodeObjects } from '../route-network.js';
import { decideSubnetHolder } from '../subnet-holder.js';
import { hostGwRouteDriver, ManagementVNic } from './routes.js';
import { RouteRecord, routeRecordPath } from './route-record.js';
import { BackendError, HostError } from '../../basics/errors.js';
import { nthAddress6, parseIp6 } from '../../basics/ip6.js';
import { checkNetworkPresent, isNetworkGone } from '../../hns/errors.js';
import type { Route } from '../../routes/route-table.js';
import { HCN_SCHEMA_V2, policySetting, sameId, type HcnEndpoint, type HcnNetwork, type HnsEndpointV1, type HnsNetworkV1 } from '../../hns/schema.js';
import { isHostVNic, resolvePhysicalAdapter } from '../../host/physical-adapter.js';
import { findInterfaceByIP } from '../../host/select.js';
import type { HostInterface } from '../../host/host.js';
import { nthAddress } from '../../basics/ip4.js';
import type { HostGwBackendConfig } from '../../subnet/net-conf-types.js';
import type { AcquireOptions, Lease } from '../../subnet/lease.js';

/** The container ID of the host endpoint's reservation in host-local's store (src/backends/ipam-reservation.ts). */
export const HOST_ENDPOINT_OWNER = 'flanneld-host-endpoint';

/** The host endpoint `<name>_ep` at `.2` of the pod subnet: what win-bridge takes as every pod's gateway. */
export function hostEndpointAddress(subnet: string): string {
  return nthAddress(subnet, 2);
}

/**
 * A network is reused (or adopted) when it is an L2Bridge whose first subnet is `subnet` with gateway
 * `gateway` (what hostgw_windows.go creates), bound to `adapter` when that is given (the external
 * interface moved to another NIC).
 */
function l2BridgeMatches(n: HnsNetworkV1, subnet: string, gateway: string, adapter?: string): boolean {
  const s = n.Subnets?.[0];
  const sameAdapter = !adapter || !n.NetworkAdapterName || n.NetworkAdapterName.toLowerCase() === adapter.toLowerCase();
  // A dual-stack network left from an EnableIPv6 run does not fit an IPv4-only one: the family set changed.
  const v4Only = !(n.Subnets ?? []).some((x) => typeof x.AddressPrefix === 'string' && x.AddressPrefix.includes(':'));
  return n.Type === 'L2Bridge' && s?.AddressPrefix === subnet && s.GatewayAddress === gateway && sameAdapter && v4Only;
}

/**
 * The dual-stack L2Bridge network (HCN v2) as Microsoft's own test recipe builds one
 * (microsoft/windows-container-networking test/utilities/connectivity_testing.go, GetDefaultIpv6Ipams, and
 * the staged network of sdnbridge-dual-stack-add.json): one Ipam per family, each with its subnet and that
 * subnet's default route via the first address (`0.0.0.0/0` via `.1`, `::/0` via `::1`).
 */
export function dualStackNetwork(name: string, subnet: string, ipv6Subnet: string, adapter: string | undefined, dnsServerList: string): HcnNetwork {
  return {
    Name: name,
    Type: 'L2Bridge',
    Ipams: [
      { Subnets: [{ IpAddressPrefix: subnet, Routes: [{ NextHop: nthAddress(subnet, 1), DestinationPrefix: '0.0.0.0/0' }] }] },
      { Subnets: [{ IpAddressPrefix: ipv6Subnet, Routes: [{ NextHop: nthAddress6(ipv6Subnet, 1), DestinationPrefix: '::/0' }] }] },
    ],
    ...(adapter ? { Policies: [{ Type: 'NetAdapterName', Settings: { NetworkAdapterName: adapter } }] } : {}),
    ...(dnsServerList ? { Dns: { ServerList: dnsServerList.split(',').map((s) => s.trim()) } } : {}),
    SchemaVersion: HCN_SCHEMA_V2,
  };
}

/** A network is reused when it is an L2Bridge with exactly these two subnets and their default routes (and the adapter, when given). */
export function dualStackMatches(n: HcnNetwork, subnet: string, ipv6Subnet: string, adapter?: string): boolean {
  const subnets = (n.Ipams ?? []).flatMap((i) => i.Subnets ?? []);
  const has = (prefix: string, dest: string, hop: string) =>
    subnets.some((s) => s.IpAddressPrefix === prefix && (s.Routes ?? []).some((r) => r.DestinationPrefix === dest && r.NextHop === hop));
  const bound = policySetting(n.Policies, 'NetAdapterName', 'NetworkAdapterName');
  const sameAdapter = !adapter || !bound || bound.toLowerCase() === adapter.toLowerCase();
  return n.Type === 'L2Bridge' && subnets.length === 2 && has(subnet, '0.0.0.0/0', nthAddress(subnet, 1)) && has(ipv6Subnet, '::/0', nthAddress6(ipv6Subnet, 1)) && sameAdapter;
}

const MANAGEMENT_IP_TIMEOUT_MS = 30_000;
const VNIC_TIMEOUT_MS = 45_000;
const ATTACH_TIMEOUT_MS = 5_000;
const POLL_MS = 500;

export class HostGwBackend implements Backend, NodeObjects {
  readonly type = 'host-gw' as const;
  private readonly cfg: HostGwBackendConfig;
  /** EnableIPv6: the network, its host endpoint, forwarding and routes carry both families. */
  private readonly dual: boolean;
  /** The HNS network's name: net-conf's Backend.Name, or the one adopted because it held the subnet. */
  private name: string;
  /** The routes this agent created (kept across restarts beside subnet.env): the only ones it removes. */
  private readonly record: RouteRecord;
  /** The network set up last (a rebuild finds it renamed by this ID). */
  private networkId: string | undefined;

  constructor(private readonly deps: BackendDeps) {
    if (deps.netConf.backend.type !== 'host-gw') throw new Error('HostGwBackend needs a host-gw backend config');
    this.cfg = deps.netConf.backend;
    this.name = this.cfg.name;
    const { flags, files } = deps;
    this.record = new RouteRecord(flags?.subnetFile && files ? { path: routeRecordPath(flags.subnetFile), fs: files } : undefined, deps.log);
    this.dual = deps.netConf.enableIPv6;
    if (this.dual && (deps.extIPv6 === undefined || deps.publicIPv6 === undefined || parseIp6(deps.publicIPv6) !== parseIp6(deps.extIPv6.address))) {
      throw new BackendError(
        'FLANNEL_ERR_BACKEND',
        "your PublicIPv6 differs from the interface's IPv6 address, meaning that probably you're on a NAT, which is not supported by host-gw backend",
        {
          publicIPv6: deps.publicIPv6,
          interfaceIPv6: deps.extIPv6?.address,
        },
      );
    }
    if (deps.publicIP !== deps.extIface.ipv4) {
      throw new BackendError('FLANNEL_ERR_BACKEND', "your PublicIP differs from interface IP, meaning that probably you're on a NAT, which is not supported by host-gw backend", {
        publicIP: deps.publicIP,
        interfaceIP: deps.extIface.ipv4,
      });
    }
  }

  async registerNetwork(signal: AbortSignal, opts?: AcquireOptions): Promise<Network> {
    const { deps } = this;
    const log = deps.log;
    if (this.dual) {
      await deps.hns.requireFeature('IPv6DualStack', 'a dual-stack network (EnableIPv6)', 'upgrade to Windows Server 2022 or newer, or remove EnableIPv6 from net-conf.json');
    }
    const attrs = { publicIP: deps.publicIP, backendType: 'host-gw', backendData: null, ...(this.dual ? { publicIPv6: deps.publicIPv6 } : {}) };
    const lease = await deps.subnetManager.acquireLease(() => Promise.resolve(attrs), signal, opts);
    if (this.dual && lease.ipv6Subnet === undefined) {
      throw new BackendError(
        'FLANNEL_ERR_BACKEND',
        'the lease has no IPv6 subnet although EnableIPv6 is set: give the node an IPv6 podCIDR (dual-stack --cluster-cidr) or remove EnableIPv6',
        {
          subnet: lease.subnet,
        },
      );
    }
    log.info('lease acquired', {
      subnet: lease.subnet,
      publicIP: lease.publicIP,
      ...(lease.ipv6Subnet !== undefined ? { ipv6Subnet: lease.ipv6Subnet, publicIPv6: lease.publicIPv6 } : {}),
    });

    const binding = await this.setUp(lease, signal);
    return new RouteNetwork({
      deps,
      lease,
      networkName: this.name,
      binding,
      rebuild: (sig) => this.setUp(lease, sig),
      nodeObjects: this,
    });
  }

  /**
   * Reserve the bridge endpoint's address (`.2`, every pod's gateway under win-bridge) in host-local's
   * store (--cni-ipam-data-dir), so no pod gets it. An address a pod already holds stays with that pod.
   * The reservation of an earlier podCIDR's `.2` is released.
   */
  settle(network: Network): Promise<void> {
    const { log, flags, files } = this.deps;
    if (!flags?.cniIpamDataDir || !files) return Promise.resolve();
    const ip = hostEndpointAddress(network.lease.subnet);
    const ifname = `${network.networkName}_ep`;
    const r = reserveAddressOrWarn(files, { dataDir: flags.cniIpamDataDir, network: network.networkName, ip, owner: HOST_ENDPOINT_OWNER, ifname }, log);
    // The one of an earlier podCIDR (the own Node registered again with another) is released.
    releaseOwnReservations(files, { dataDir: flags.cniIpamDataDir, network: network.networkName, owner: HOST_ENDPOINT_OWNER, keep: ip }, log);
    if (!r) return Promise.resolve();
    if (r.torn) log.warn('rewrote a torn host-local reservation (empty or zero-filled: no container holds it)', { path: r.path, ip, endpoint: ifname });
    else if (r.result === 'reserved') log.info('reserved the host endpoint address in host-local IPAM', { path: r.path, ip, endpoint: ifname });
    if (r.result === 'held') {
      log.warn("a pod holds the host endpoint's address (every pod's gateway); it keeps it until it is deleted: recreate that pod", {
        path: r.path,
        ip,
        container: r.holder,
      });
    }
    return Promise.resolve();
  }

  /**
   * The L2Bridge network, its host endpoint and forwarding on both vNICs; the binding writes routes on the
   * management vNIC. Also the rebuild after the network disappeared (the vNIC then has a new index).
   */
  private async setUp(lease: Lease, signal: AbortSignal): Promise<NetworkBinding<Route, Route>> {
    const { deps } = this;
    // A rebuild after the network was renamed outside flanneld: still ours (its ID), lost to the plugins; it
    // goes, and is created under its name.
    const renamed = this.networkId === undefined ? undefined : await deps.hns.getNetworkV1(this.networkId);
    if (renamed && renamed.Name !== this.name) {
      deps.log.warn('deleting the HNS network renamed outside flanneld; recreating it under its name', { network: this.name, id: this.networkId, renamed: renamed.Name });
      await deps.hns.deleteNetworkV1(this.networkId!);
    }
    const dual = this.dual && lease.ipv6Subnet !== undefined;
    const network = dual ? await this.ensureDualStackNetwork(lease, signal) : await this.ensureNetwork(lease, signal);
    this.networkId = network.ID;
    const name = this.name;
    const endpoint = dual
      ? await this.ensureDualStackHostEndpoint(network, lease, signal)
      : await this.ensureHostEndpoint(network, lease, signal).then((ep) => ({ ip: ep.IPAddress!, id: ep.ID! }));
    const endpointIP = endpoint.ip;
    const mgmt = await this.waitForInterface(network.ManagementIP!, signal);
    const epIface = await this.waitForInterface(endpointIP, signal);
    for (const iface of [mgmt, epIface]) {
      for (const family of dual ? (['ipv4', 'ipv6'] as const) : (['ipv4'] as const)) {
        // IPv4 keeps its call shape (no family argument): an IPv4-only node's calls are unchanged.
        const on = family === 'ipv4' ? await deps.host.getForwarding(iface.index) : await deps.host.getForwarding(iface.index, family);
        if (on) continue;
        if (family === 'ipv4') await deps.host.setForwarding(iface.index, true);
        else await deps.host.setForwarding(iface.index, true, family);
        deps.log.info('enabled forwarding', { interface: iface.name, index: iface.index, ...(dual ? { family } : {}) });
      }
    }
    const networkId = network.ID!;
    const endpointId = endpoint.id;
    const vnic = new ManagementVNic(deps.host, mgmt, deps.log, dual);
    return {
      networkId,
      // HNS restarted (it drops every endpoint, microsoft/Windows-Containers#278) or someone removed them.
      lost: async () => {
        const lost: HnsObjectKind[] = [];
        if (!(await deps.hns.getNetworkV1(networkId))) lost.push('network');
        const ep = await deps.hns.getEndpointByNameV1(`${name}_ep`);
        if (!ep || !sameId(ep.ID, endpointId)) lost.push('host-endpoint');
        return lost;
      },
      driver: hostGwRouteDriver({
        routes: deps.routes,
        network: deps.netConf.network,
        ownSubnet: lease.subnet,
        vnic,
        record: this.record,
        log: deps.log,
        checkNetwork: async () => {
          checkNetworkPresent(await deps.hns.getNetworkV1(networkId), name, networkId);
        },
        networkGone: isNetworkGone,
        ...(dual ? { ipv6: { network: deps.netConf.ipv6Network, ownSubnet: lease.ipv6Subnet! } } : {}),
      }),
      mtu: mgmt.mtu,
    };
  }

  /**
   * Reuse a network whose name, type, subnet and gateway match (and adapter, when the external interface
   * is a physical one); otherwise (re)create it, bound to the external interface's physical adapter.
   */
  private async ensureNetwork(lease: Lease, signal: AbortSignal): Promise<HnsNetworkV1> {
    const { deps, cfg } = this;
    const gateway = nthAddress(lease.subnet, 1);
    const networks = await deps.hns.listNetworksV1();
    let existing = networks.find((n) => n.Name === this.name);
    const wantAdapter = isHostVNic(deps.extIface.name) ? undefined : deps.extIface.name;
    // One matcher for reuse and adoption: an adopted network it rejected would be deleted, pods and all.
    const fits = (n: HnsNetworkV1) => l2BridgeMatches(n, lease.subnet, gateway, wantAdapter);
    if (!existing || !fits(existing)) {
      const decision = decideSubnetHolder(
        networks.map((n) => ({
          name: n.Name,
          id: n.ID,
          type: n.Type,
          subnets: (n.Subnets ?? []).map((x) => x.AddressPrefix),
          ...(n.Subnets?.[0]?.GatewayAddress ? { gateway: n.Subnets[0].GatewayAddress } : {}),
          net: n,
        })),
        { name: this.name, type: 'L2Bridge', subnet: lease.subnet, gateway },
        (s) => fits(s.net),
      );
      if (decision.kind === 'adopt') {
        deps.log.warn("adopting the HNS network that already holds this node's subnet instead of creating a second one; set Backend.Name in net-conf.json to it", {
          network: decision.network.name,
          id: decision.network.id,
          subnet: lease.subnet,
          configured: this.name,
        });
        this.name = decision.network.name;
        existing = decision.network.net;
      }
    }
    if (existing && fits(existing)) {
      deps.log.info('reusing existing HNS network', { network: this.name, id: existing.ID });
      if (existing.ManagementIP) return existing;
      return deps.hns.waitForManagementIP(existing.ID!, { timeoutMs: MANAGEMENT_IP_TIMEOUT_MS, intervalMs: POLL_MS });
    }
    if (existing) {
      deps.log.warn('deleting HNS network whose type, subnet or adapter changed', {
        network: this.name,
        id: existing.ID,
        type: existing.Type,
        subnets: existing.Subnets?.map((s) => s.AddressPrefix).join(','),
        adapter: existing.NetworkAdapterName,
        want: lease.subnet,
      });
      await deps.hns.deleteNetworkV1(existing.ID!);
    }
    const adapter = await resolvePhysicalAdapter({ host: deps.host, iface: deps.extIface, networks, clock: deps.clock, signal });
    const body: HnsNetworkV1 = {
      Name: this.name,
      Type: 'L2Bridge',
      NetworkAdapterName: adapter,
      ...(cfg.dnsServerList ? { DNSServerList: cfg.dnsServerList } : {}),
      Subnets: [{ AddressPrefix: lease.subnet, GatewayAddress: gateway }],
    };
    deps.log.info('creating HNS network', { network: this.name, type: 'L2Bridge', subnet: lease.subnet, adapter });
    const created = await deps.hns.createNetworkV1(body);
    signal.throwIfAborted();
    const ready = await deps.hns.waitForManagementIP(created.ID!, { timeoutMs: MANAGEMENT_IP_TIMEOUT_MS, intervalMs: POLL_MS });
    deps.log.info('created HNS network', { network: this.name, id: ready.ID, managementIP: ready.ManagementIP });
    return ready;
  }

  /**
   * Dual-stack: reuse the HCN v2 network when it is the L2Bridge with both subnets (dualStackMatches);
   * otherwise delete what holds the name (an IPv4-only network from before: the family set changed) and
   * create it, bound to the physical adapter. Returns its v1 view, which carries the ManagementIP.
   */
  private async ensureDualStackNetwork(lease: Lease, signal: AbortSignal): Promise<HnsNetworkV1> {
    const { deps, cfg } = this;
    const ipv6Subnet = lease.ipv6Subnet!;
    const wantAdapter = isHostVNic(deps.extIface.name) ? undefined : deps.extIface.name;
    const existing = (await deps.hns.listNetworks()).find((n) => n.Name === this.name);
    if (existing && dualStackMatches(existing, lease.subnet, ipv6Subnet, wantAdapter)) {
      deps.log.info('reusing existing HNS network', { network: this.name, id: existing.ID });
      return deps.hns.waitForManagementIP(existing.ID!, { timeoutMs: MANAGEMENT_IP_TIMEOUT_MS, intervalMs: POLL_MS });
    }
    if (existing) {
      deps.log.warn('deleting HNS network whose type, subnets or adapter changed (a change of IP families rebuilds it)', {
        network: this.name,
        id: existing.ID,
        type: existing.Type,
        subnets: (existing.Ipams ?? [])
          .flatMap((i) => i.Subnets ?? [])
          .map((s) => s.IpAddressPrefix)
          .join(','),
        want: `${lease.subnet},${ipv6Subnet}`,
      });
      await deps.hns.deleteNetwork(existing.ID!);
    }
    const adapter = await resolvePhysicalAdapter({ host: deps.host, iface: deps.extIface, networks: await deps.hns.listNetworksV1(), clock: deps.clock, signal });
    deps.log.info('creating HNS network', { network: this.name, type: 'L2Bridge', subnet: lease.subnet, ipv6Subnet, adapter });
    const created = await deps.hns.createNetwork(dualStackNetwork(this.name, lease.subnet, ipv6Subnet, adapter, cfg.dnsServerList));
    signal.throwIfAborted();
    const ready = await deps.hns.waitForManagementIP(created.ID!, { timeoutMs: MANAGEMENT_IP_TIMEOUT_MS, intervalMs: POLL_MS });
    deps.log.info('created HNS network', { network: this.name, id: ready.ID, managementIP: ready.ManagementIP });
    return ready;
  }

  /**
   * Dual-stack `<name>_ep` (HCN v2): both IpConfigurations (`.2` and `::2`, every pod's gateways under
   * the dual-stack conflist) and both default routes, attached to the host compartment. Returns its IPv4 address and ID.
   */
  private async ensureDualStackHostEndpoint(network: HnsNetworkV1, lease: Lease, signal: AbortSignal): Promise<{ ip: string; id: string }> {
    const { deps } = this;
    const name = `${this.name}_ep`;
    const ip = hostEndpointAddress(lease.subnet);
    const ip6 = nthAddress6(lease.ipv6Subnet!, 2);
    const eps = await deps.hns.listEndpoints(network.ID);
    let ep = eps.find((e) => e.Name === name);
    const ips = (e: HcnEndpoint) => (e.IpConfigurations ?? []).map((c) => c.IpAddress);
    if (ep && !(ips(ep).includes(ip) && ips(ep).some((a) => parseIp6(a) === parseIp6(ip6)))) {
      deps.log.warn('deleting stale host endpoint', { endpoint: name, id: ep.ID, ip: ips(ep).join(',') });
      await deps.hns.deleteEndpoint(ep.ID!);
      ep = undefined;
    }
    if (!ep) {
      ep = await deps.hns.createEndpoint(network.ID!, {
        Name: name,
        HostComputeNetwork: network.ID!,
        IpConfigurations: [{ IpAddress: ip }, { IpAddress: ip6 }],
        Routes: [
          { NextHop: nthAddress(lease.subnet, 1), DestinationPrefix: '0.0.0.0/0' },
          { NextHop: nthAddress6(lease.ipv6Subnet!, 1), DestinationPrefix: '::/0' },
        ],
        SchemaVersion: HCN_SCHEMA_V2,
      });
      deps.log.info('created host endpoint', { endpoint: name, id: ep.ID, ip, ipv6: ip6 });
    } else {
      deps.log.info('reusing host endpoint', { endpoint: name, id: ep.ID, ip, ipv6: ip6 });
    }
    await this.attach(ep.ID!, signal);
    return { ip, id: ep.ID! };
  }

  /** Attach an endpoint to the host compartment, retried while HNS is still wiring it (ATTACH_TIMEOUT_MS). */
  private async attach(id: string, signal: AbortSignal): Promise<void> {
    const { deps } = this;
    let lastErr: unknown;
    const attached = await poll(
      deps.clock,
      async () => {
        try {
          await deps.hns.attachEndpointToHost(id);
          return true;
        } catch (err) {
          lastErr = err;
          return undefined;
        }
      },
      { intervalMs: POLL_MS, timeoutMs: ATTACH_TIMEOUT_MS, signal },
    );
    if (!attached) throw lastErr;
  }

  /** `<name>_ep` at .2 on this network, attached to the host compartment. */
  private async ensureHostEndpoint(network: HnsNetworkV1, lease: Lease, signal: AbortSignal): Promise<HnsEndpointV1> {
    const { deps } = this;
    const name = `${this.name}_ep`;
    const ip = hostEndpointAddress(lease.subnet);
    let ep = await deps.hns.getEndpointByNameV1(name);
    const matches = ep && ep.IPAddress === ip && sameId(ep.VirtualNetwork, network.ID);
    if (ep && !matches) {
      deps.log.warn('deleting stale host endpoint', { endpoint: name, id: ep.ID, ip: ep.IPAddress });
      await deps.hns.deleteEndpointV1(ep.ID!);
      ep = undefined;
    }
    if (!ep) {
      ep = await deps.hns.createEndpointV1({ Name: name, IPAddress: ip, VirtualNetwork: network.ID! });
      deps.log.info('created host endpoint', { endpoint: name, id: ep.ID, ip });
    } else {
      deps.log.info('reusing host endpoint', { endpoint: name, id: ep.ID, ip });
    }
    await this.attach(ep.ID!, signal);
    return ep;
  }

  /** The vNIC holding `ip` (it appears, with a new index, after the vSwitch is built). */
  private async waitForInterface(ip: string, signal: AbortSignal): Promise<HostInterface> {
    const { deps } = this;
    const iface = await poll(deps.clock, async () => findInterfaceByIP(await deps.host.interfaces(), ip), {
      intervalMs: POLL_MS,
      timeoutMs: VNIC_TIMEOUT_MS,
      signal,
    });
    if (!iface) {
      throw new HostError(
        'FLANNEL_ERR_HOST',
        `no network interface holds ${ip} after creating HNS network ${this.name}; check the host's adapters (Get-NetIPAddress) and the vSwitch`,
        {
          ip,
          network: this.name,
        },
      );
    }
    return iface;
  }
}
