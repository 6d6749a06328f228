// host-gw on Windows: an L2Bridge HNS network (HNS v1), a host endpoint at .2, forwarding on both vNICs,
// and one route per peer on the management vNIC. Mirrors flannel pkg/backend/hostgw/hostgw_windows.go,
// but reuses a matching network and endpoint, and sweeps stale routes (upstream never does: flannel#2554).
import { poll, type Backend, type BackendDeps, type Network } from '../backend.js';
import { RouteNetwork, type HnsObjectKind, type NetworkBinding } from '../route-network.js';
import { decideSubnetHolder } from '../subnet-holder.js';
import { hostGwRouteDriver, ManagementVNic } from './routes.js';
import { RouteRecord } from './route-record.js';
import { BackendError, HostError } from '../../errors.js';
import { isNetworkGone, networkGoneError } from '../../hns/errors.js';
import type { Route } from '../../routes/route-table.js';
import { sameId, type HnsEndpointV1, type HnsNetworkV1 } from '../../hns/schema.js';
import { isHostVNic, resolvePhysicalAdapter } from '../../host/physical-adapter.js';
import { findInterfaceByIP } from '../../host/select.js';
import type { HostInterface } from '../../host/host.js';
import { nthAddress } from '../../ip4.js';
import type { HostGwBackendConfig } from '../../subnet/net-conf-types.js';
import type { Lease } from '../../subnet/lease.js';

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
  return n.Type === 'L2Bridge' && s?.AddressPrefix === subnet && s.GatewayAddress === gateway && sameAdapter;
}

const MANAGEMENT_IP_TIMEOUT_MS = 30_000;
const VNIC_TIMEOUT_MS = 45_000;
const ATTACH_TIMEOUT_MS = 5_000;
const POLL_MS = 500;

export class HostGwBackend implements Backend {
  readonly type = 'host-gw' as const;
  private readonly cfg: HostGwBackendConfig;
  /** The HNS network's name: net-conf's Backend.Name, or the one adopted because it held the subnet. */
  private name: string;
  /** The routes this agent created (kept across restarts beside subnet.env): the only ones it removes. */
  private readonly record: RouteRecord;

  constructor(private readonly deps: BackendDeps) {
    if (deps.netConf.backend.type !== 'host-gw') throw new Error('HostGwBackend needs a host-gw backend config');
    this.cfg = deps.netConf.backend;
    this.name = this.cfg.name;
    this.record = new RouteRecord(deps.routeRecord, deps.log);
    if (deps.publicIP !== deps.extIface.ipv4) {
      throw new BackendError('FLANNEL_ERR_BACKEND', "your PublicIP differs from interface IP, meaning that probably you're on a NAT, which is not supported by host-gw backend", {
        publicIP: deps.publicIP,
        interfaceIP: deps.extIface.ipv4,
      });
    }
  }

  async registerNetwork(signal: AbortSignal): Promise<Network> {
    const { deps } = this;
    const log = deps.log;
    const lease = await deps.subnetManager.acquireLease(() => Promise.resolve({ publicIP: deps.publicIP, backendType: 'host-gw', backendData: null }), signal);
    log.info('lease acquired', { subnet: lease.subnet, publicIP: lease.publicIP });

    const binding = await this.setUp(lease, signal);
    return new RouteNetwork({
      deps,
      lease,
      networkName: this.name,
      binding,
      rebuild: (sig) => this.setUp(lease, sig),
    });
  }

  /**
   * The L2Bridge network, its host endpoint and forwarding on both vNICs; the binding writes routes on the
   * management vNIC. Also the rebuild after the network disappeared (the vNIC then has a new index).
   */
  private async setUp(lease: Lease, signal: AbortSignal): Promise<NetworkBinding<Route, Route>> {
    const { deps } = this;
    const network = await this.ensureNetwork(lease, signal);
    const name = this.name;
    const endpoint = await this.ensureHostEndpoint(network, lease, signal);
    const mgmt = await this.waitForInterface(network.ManagementIP!, signal);
    const epIface = await this.waitForInterface(endpoint.IPAddress!, signal);
    for (const iface of [mgmt, epIface]) {
      if (!(await deps.host.getForwarding(iface.index))) {
        await deps.host.setForwarding(iface.index, true);
        deps.log.info('enabled forwarding', { interface: iface.name, index: iface.index });
      }
    }
    const networkId = network.ID!;
    const endpointId = endpoint.ID!;
    const vnic = new ManagementVNic(deps.host, mgmt, deps.log);
    return {
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
          if (!(await deps.hns.getNetworkV1(networkId))) throw networkGoneError(name, networkId);
        },
        networkGone: isNetworkGone,
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
    const id = ep.ID!;
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
