// vxlan on Windows: an Overlay HNS network (HCN v2) with VSID = VNI, whose DR MAC is published as the
// VtepMAC, and one RemoteSubnetRoute policy per peer. Mirrors flannel pkg/backend/vxlan/vxlan_windows.go
// and device_windows.go, but publishes the lease only once the network and its MAC exist (upstream first
// publishes an empty VtepMAC) and keeps the policies equal to the desired set (upstream never sweeps).
// Beside the network it keeps kube-proxy's source VIP (./source-vip.ts): reserved by the network's
// `settle`, checked every resync period.
import { poll, type Backend, type BackendDeps, type Network } from '../backend.js';
import { RouteNetwork, type HnsObjectKind, type NetworkBinding, type NodeObjects } from '../route-network.js';
import { decideSubnetHolder, type NetworkSummary } from '../subnet-holder.js';
import { remoteEndpointDriver } from './remote-endpoints.js';
import { POLICY_BATCH, remoteSubnetRouteDriver, type RemoteSubnetRoutePolicy } from './policies.js';
import { publishSourceVipFiles, reserveSourceVip, writeSourceVipFiles, type SourceVipRecord } from './source-vip.js';
import { BackendError, HostError } from '../../basics/errors.js';
import { HCN_FLAG_NON_PERSISTENT, HCN_SCHEMA_V2, policySetting, type HcnNetwork, type HnsEndpointV1 } from '../../hns/schema.js';
import type { HostInterface } from '../../host/host.js';
import { isHostVNic, resolvePhysicalAdapter } from '../../host/physical-adapter.js';
import { findInterfaceByIP } from '../../host/select.js';
import { nthAddress } from '../../basics/ip4.js';
import { componentLogger } from '../../basics/log.js';
import { macToFlannel } from '../../basics/mac.js';
import { isVxlanBackendData, type AcquireOptions, type Lease, type LeaseAttrs, type VxlanBackendData } from '../../subnet/lease.js';
import { DEFAULT_VXLAN_PORT, type VxlanBackendConfig } from '../../subnet/net-conf-types.js';

/** What the vxlan drivers write: RemoteSubnetRoute policies, or legacy remote endpoints. */
type VxlanItem = RemoteSubnetRoutePolicy | HnsEndpointV1;

/** VXLAN encapsulation overhead subtracted from the interface MTU. */
const ENCAP_OVERHEAD = 50;
const PROVIDER_ADDRESS_TIMEOUT_MS = 5_000;
const VNIC_TIMEOUT_MS = 45_000;
const POLL_MS = 500;

export const providerAddress = (net: HcnNetwork): string | undefined => policySetting(net.Policies, 'ProviderAddress', 'ProviderAddress');
export const drMacAddress = (net: HcnNetwork): string | undefined => policySetting(net.Policies, 'DrMacAddress', 'Address');

/** The VxlanPort policy's port on `net` (a number, as hcsshim's uint16 marshals); DEFAULT_VXLAN_PORT without one (HNS's own). */
export function vxlanPortOf(net: HcnNetwork): number {
  const port = net.Policies?.find((p) => p.Type === 'VxlanPort')?.Settings?.['Port'];
  return port === undefined ? DEFAULT_VXLAN_PORT : Number(port);
}

/**
 * The Overlay network this backend wants for `subnet` (device_windows.go newVXLANDevice), with a VxlanPort
 * policy (hcsshim hcnpolicy.go VxlanPortPolicySetting, HNS 10.3) only when the port is not the default, as
 * OVN-Kubernetes go-controller/hybrid-overlay/pkg/controller/overlay_windows.go GetHostComputeNetworkConfig
 * does. HNS takes it at creation only: a port change is a new network (overlayMatches).
 */
export function overlayNetworkFor(cfg: VxlanBackendConfig, subnet: string, adapterName: string): HcnNetwork {
  const adapter = adapterName ? [{ Type: 'NetAdapterName', Settings: { NetworkAdapterName: adapterName } }] : [];
  const port = cfg.port === DEFAULT_VXLAN_PORT ? [] : [{ Type: 'VxlanPort', Settings: { Port: cfg.port } }];
  return {
    Name: cfg.name,
    Type: 'Overlay',
    Ipams: [
      {
        Type: 'Static',
        Subnets: [
          {
            IpAddressPrefix: subnet,
            Policies: [{ Type: 'VSID', Settings: { IsolationId: cfg.vni } }],
            Routes: [{ NextHop: nthAddress(subnet, 1), DestinationPrefix: '0.0.0.0/0' }],
          },
        ],
      },
    ],
    Policies: [...adapter, ...port],
    Flags: HCN_FLAG_NON_PERSISTENT,
    SchemaVersion: HCN_SCHEMA_V2,
  };
}

/**
 * A network is reused when its type, subnet, VSID and VXLAN port match (a VNI or port change needs a new
 * network), and its adapter when `adapter` is given (the external interface moved to another NIC).
 */
function overlayMatches(net: HcnNetwork, subnet: string, vni: number, port: number, adapter?: string): boolean {
  const s = net.Ipams?.[0]?.Subnets?.[0];
  const vsid = s?.Policies?.find((p) => p.Type === 'VSID')?.Settings?.['IsolationId'];
  const bound = policySetting(net.Policies, 'NetAdapterName', 'NetworkAdapterName');
  const sameAdapter = adapter === undefined || bound === undefined || bound.toLowerCase() === adapter.toLowerCase();
  return net.Type === 'Overlay' && s?.IpAddressPrefix === subnet && (vsid === undefined || Number(vsid) === vni) && vxlanPortOf(net) === port && sameAdapter;
}

export class VxlanBackend implements Backend, NodeObjects {
  readonly type = 'vxlan' as const;
  private readonly cfg: VxlanBackendConfig;
  private network: HcnNetwork | undefined;
  /** The HNS network's name: net-conf's Backend.Name, or the one adopted because it held the subnet. */
  private name: string;
  /** kube-proxy's source VIP, as `settle` last reserved it. */
  sourceVip: SourceVipRecord | undefined;
  /** The agent published the network (Network.publish): the source VIP files are written from then on. */
  private published = false;

  constructor(private readonly deps: BackendDeps) {
    if (deps.netConf.backend.type !== 'vxlan') throw new Error('VxlanBackend needs a vxlan backend config');
    this.cfg = deps.netConf.backend;
    this.name = this.cfg.name;
  }

  async registerNetwork(signal: AbortSignal, opts?: AcquireOptions): Promise<Network> {
    const { deps, cfg } = this;
    await deps.hns.requireFeature('RemoteSubnet', 'the vxlan backend (RemoteSubnetRoute policies)', 'upgrade to Windows Server 2019 or newer, or use the host-gw backend');
    if (cfg.port !== DEFAULT_VXLAN_PORT) {
      await deps.hns.requireFeature(
        'VxlanPort',
        `VXLAN on UDP port ${cfg.port} (net-conf Backend.Port)`,
        `upgrade to Windows Server 2022 or newer, or set Backend.Port ${DEFAULT_VXLAN_PORT} in the cluster's shared net-conf (flanneld netconf set-vni --port ${DEFAULT_VXLAN_PORT})`,
      );
    }
    deps.log.info('vxlan config', { name: cfg.name, vni: cfg.vni, port: cfg.port, macPrefix: cfg.macPrefix, legacyRemoteEndpoints: cfg.legacyRemoteEndpoints });

    const lease = await deps.subnetManager.acquireLease((subnet) => this.prepareNetwork(subnet, signal), signal, opts);
    const net = this.network!;
    deps.log.info('lease acquired', { subnet: lease.subnet, publicIP: lease.publicIP, network: this.name, id: net.ID });

    return new RouteNetwork({
      deps,
      lease,
      networkName: this.name,
      binding: this.bind(net, deps.extIface.mtu),
      rebuild: (sig) => this.rebuild(lease, sig),
      nodeObjects: this,
    });
  }

  /**
   * Reserve kube-proxy's source VIP (an endpoint no pod can get) and, once published, write where the
   * scripts look (--source-vip-file, --source-vip-compat-files); none without --source-vip-file.
   */
  async settle(network: Network): Promise<void> {
    const { deps } = this;
    const { flags, files } = deps;
    if (!flags?.sourceVipFile || !files) return;
    this.sourceVip = await reserveSourceVip({
      hns: deps.hns,
      networkName: network.networkName,
      subnet: network.lease.subnet,
      file: flags.sourceVipFile,
      compatFiles: flags.sourceVipCompatFiles ?? [],
      ipamDataDir: flags.cniIpamDataDir ?? '',
      macFor: (providerAddress) => deps.host.macAddress(providerAddress),
      log: componentLogger(deps.log, 'source-vip'),
      fs: files,
      writeFiles: this.published,
    });
    deps.log.info('kube-proxy source VIP', { ip: this.sourceVip.ip, file: flags.sourceVipFile, endpoint: this.sourceVip.endpointId });
  }

  /** From now on the source VIP files are written: now for the VIP `settle` reserved, later by `settle` and `lost`. */
  publish(): void {
    this.published = true;
    const { deps, sourceVip: vip } = this;
    if (!vip || !deps.files) return;
    publishSourceVipFiles(deps.files, vip, {
      file: deps.flags?.sourceVipFile ?? '',
      compatFiles: deps.flags?.sourceVipCompatFiles ?? [],
      log: componentLogger(deps.log, 'source-vip'),
    });
  }

  /**
   * The source VIP endpoint, under the ID `settle` reserved it with (an HNS restart drops it). While it
   * stands, and once published, the files kube-proxy's scripts read it from at each kube-proxy start are
   * kept too: one deleted or edited (C:\k cleaned by hand) would send them to host-local for another
   * address than the endpoint's; it is written again, with a warning.
   */
  async lost(): Promise<HnsObjectKind[]> {
    const { deps, sourceVip: vip } = this;
    if (!vip?.endpointId || !deps.files) return [];
    if (!(await deps.hns.getEndpoint(vip.endpointId))) return ['source-vip'];
    if (!this.published) return [];
    const log = componentLogger(deps.log, 'source-vip');
    const written = writeSourceVipFiles(deps.files, vip, { file: deps.flags?.sourceVipFile ?? '', compatFiles: deps.flags?.sourceVipCompatFiles ?? [], log });
    for (const path of written) log.warn('a source VIP file kube-proxy reads was missing or changed; wrote it again', { path, ip: vip.ip });
    return [];
  }

  /** The driver and peer mapping for one incarnation of the Overlay network. */
  private bind(net: HcnNetwork, ifaceMtu: number): NetworkBinding<VxlanItem, VxlanItem> {
    const { deps, cfg } = this;
    const mtu = ifaceMtu - ENCAP_OVERHEAD;
    // The Overlay network is non-persistent: an HNS restart removes it (src/simulator/objects.ts restartHns).
    // Asked by ID, without reading its policies (the check runs every resync period, a full pass or not).
    const lost = async (): Promise<HnsObjectKind[]> => ((await deps.hns.hasNetwork(net.ID!)) ? [] : ['network']);
    // Both drivers' reads fail `gone` without the network: a resync whose pass read it needs no `lost` read.
    const checks = { lost, lostIsNetworkRead: true, networkId: net.ID! };
    if (cfg.legacyRemoteEndpoints) {
      return { driver: remoteEndpointDriver(deps.hns, net.ID!, cfg.macPrefix, this.name), mtu, ...checks };
    }
    return { driver: remoteSubnetRouteDriver(deps.hns, net.ID!, deps.flags?.hnsPolicyBatchSize ?? POLICY_BATCH, this.name), mtu, ...checks };
  }

  /**
   * The network disappeared while the agent ran: create it again for the same subnet, on the adapter the
   * old one was bound to, asking HNS for the DR MAC peers already know as our VtepMAC (hcsshim
   * hcn/hcnpolicy.go DrMacAddressNetworkPolicySetting "sets the DR MAC for a network").
   */
  private async rebuild(lease: Lease, signal: AbortSignal): Promise<NetworkBinding<VxlanItem, VxlanItem>> {
    const { deps } = this;
    const old = this.network!;
    const adapter = policySetting(old.Policies, 'NetAdapterName', 'NetworkAdapterName') ?? deps.extIface.name;
    const oldMac = drMacAddress(old);
    // Renamed outside flanneld: still ours (its ID), lost to the plugins; it goes, and is created under its name.
    const renamed = await deps.hns.getNetwork(old.ID!);
    if (renamed && renamed.Name !== this.name) {
      deps.log.warn('deleting the HNS network renamed outside flanneld; recreating it under its name', { network: this.name, id: old.ID, renamed: renamed.Name });
      await deps.hns.deleteNetwork(old.ID!);
    }
    const { net, vnic } = await this.ensureNetwork(lease.subnet, signal, { adapter, drMac: oldMac });
    this.network = net;
    const newMac = drMacAddress(net);
    // Compared with what peers know (the lease's VtepMAC), not with the old network's MAC: when a publish
    // failed, the retried rebuild finds the new network already there and must still publish its MAC.
    const published = isVxlanBackendData(lease.backendData) ? lease.backendData.VtepMAC : undefined;
    if (newMac && published && macToFlannel(newMac) !== published) {
      // HNS may ignore the DrMacAddress asked for; peers address our pods by the published VtepMAC, so
      // publish the new one (kube: the backend-data annotation; etcd: the lease value) and they follow.
      deps.log.warn('the recreated HNS network has another DR MAC than the VtepMAC this node published; publishing the new one', {
        network: this.name,
        published,
        now: macToFlannel(newMac),
      });
      const backendData: VxlanBackendData = { VNI: this.cfg.vni, VtepMAC: macToFlannel(newMac) };
      await deps.subnetManager.republishLease(lease, { publicIP: deps.publicIP, backendType: 'vxlan', backendData }, signal);
      lease.backendData = backendData;
    }
    return this.bind(net, vnic?.mtu ?? deps.extIface.mtu);
  }

  /** Ensure the Overlay network for the own subnet and return the attributes to publish (with its DR MAC). */
  private async prepareNetwork(subnet: string, signal: AbortSignal): Promise<LeaseAttrs> {
    const { deps, cfg } = this;
    const { net } = await this.ensureNetwork(subnet, signal);
    this.network = net;
    const drMac = drMacAddress(net);
    if (!drMac) {
      throw new BackendError(
        'FLANNEL_ERR_BACKEND',
        `HNS network ${this.name} has no DrMacAddress policy, so there is no VtepMAC to publish; delete the network and restart flanneld`,
        {
          network: this.name,
          id: net.ID,
        },
      );
    }
    const data: VxlanBackendData = { VNI: cfg.vni, VtepMAC: macToFlannel(drMac) };
    return { publicIP: deps.publicIP, backendType: 'vxlan', backendData: data };
  }

  /** Reuse or (re)create the Overlay network; `vnic` is the host vNIC when this call created the network. */
  private async ensureNetwork(subnet: string, signal: AbortSignal, opts: { adapter?: string; drMac?: string } = {}): Promise<{ net: HcnNetwork; vnic?: HostInterface }> {
    const { deps, cfg } = this;
    let existing = await deps.hns.getNetworkByName(this.name);
    const wantAdapter = isHostVNic(deps.extIface.name) ? undefined : deps.extIface.name;
    let net: HcnNetwork;
    let vnic: HostInterface | undefined;
    let replace: HcnNetwork | undefined;
    if (!existing || !overlayMatches(existing, subnet, cfg.vni, cfg.port, wantAdapter)) {
      const holder = await this.subnetHolder(subnet, wantAdapter);
      if (holder?.kind === 'adopt') existing = holder.network;
      if (holder?.kind === 'replace') replace = holder.network;
    }
    if (existing && overlayMatches(existing, subnet, cfg.vni, cfg.port, wantAdapter)) {
      deps.log.info('reusing existing HNS network', { network: this.name, id: existing.ID });
      net = existing;
    } else {
      // Listed before the old network goes: it names the physical adapter behind a vEthernet interface.
      const networks = wantAdapter || opts.adapter ? [] : await deps.hns.listNetworksV1();
      if (existing) {
        deps.log.warn('deleting HNS network whose type, subnet, VNI, VXLAN port or adapter changed', {
          network: this.name,
          id: existing.ID,
          type: existing.Type,
          subnet: existing.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix,
          port: vxlanPortOf(existing),
          adapter: policySetting(existing.Policies, 'NetAdapterName', 'NetworkAdapterName'),
          want: subnet,
          wantPort: cfg.port,
        });
        await deps.hns.deleteNetwork(existing.ID!);
      }
      if (replace) {
        deps.log.warn('deleting the HNS network of the previous VNI: it holds this subnet', {
          network: replace.Name,
          id: replace.ID,
          subnet,
          want: this.name,
          vni: cfg.vni,
        });
        await deps.hns.deleteNetwork(replace.ID!);
      }
      const adapter = opts.adapter ?? (await resolvePhysicalAdapter({ host: deps.host, iface: deps.extIface, networks, clock: deps.clock, signal }));
      deps.log.info('creating HNS network', { network: this.name, type: 'Overlay', subnet, vni: cfg.vni, port: cfg.port, adapter });
      const body = overlayNetworkFor({ ...cfg, name: this.name }, subnet, adapter);
      if (opts.drMac) body.Policies = [...(body.Policies ?? []), { Type: 'DrMacAddress', Settings: { Address: opts.drMac } }];
      const created = await deps.hns.createNetwork(body);
      const ready = await poll(
        deps.clock,
        async () => {
          const n = await deps.hns.getNetwork(created.ID!);
          return n && providerAddress(n) ? n : undefined;
        },
        { intervalMs: POLL_MS, timeoutMs: PROVIDER_ADDRESS_TIMEOUT_MS, signal },
      );
      if (!ready) {
        throw new BackendError('FLANNEL_ERR_BACKEND', `timeout, failed to get management IP from HostComputeNetwork ${this.name}; check the adapter ${adapter} is up`, {
          network: this.name,
          id: created.ID,
        });
      }
      const pa = providerAddress(ready)!;
      vnic = await poll(deps.clock, async () => findInterfaceByIP(await deps.host.interfaces(), pa), { intervalMs: POLL_MS, timeoutMs: VNIC_TIMEOUT_MS, signal });
      if (!vnic) {
        throw new HostError('FLANNEL_ERR_HOST', `Interface bound to ${this.name} took too long to get ready. Please check your network host configuration`, {
          network: this.name,
          ip: pa,
        });
      }
      deps.log.info('created HNS network', { network: this.name, id: ready.ID, providerAddress: pa, vnic: vnic.name, index: vnic.index });
      net = ready;
    }
    if (!net.Policies?.some((p) => p.Type === 'HostRoute')) {
      try {
        await deps.hns.addNetworkPolicies(net.ID!, [{ Type: 'HostRoute', Settings: {} }]);
        net = (await deps.hns.getNetwork(net.ID!)) ?? net;
      } catch (err) {
        deps.log.warn('could not apply the HostRoute policy (host to local pod connectivity); it needs Windows 18321 or newer', {
          network: this.name,
          error: (err as Error).message,
        });
      }
    }
    return { net, vnic };
  }

  /**
   * Another HNS network already holding `subnet` (an earlier install's `vxlan0`): adopt it when it is the
   * Overlay network this backend would create, so its pods and kube-proxy's source VIP keep working;
   * replace the agent's own network of an earlier VNI; refuse (FLANNEL_ERR_NETWORK_CLASH) anything else.
   * Never a second network on one subnet.
   */
  private async subnetHolder(subnet: string, wantAdapter: string | undefined): Promise<{ kind: 'adopt' | 'replace'; network: HcnNetwork } | undefined> {
    const { deps, cfg } = this;
    const networks = await deps.hns.listNetworks();
    const summaries: (NetworkSummary & { net: HcnNetwork })[] = networks.map((n) => {
      const subnets = (n.Ipams ?? []).flatMap((i) => (i.Subnets ?? []).map((x) => x.IpAddressPrefix ?? ''));
      const vsid = n.Ipams?.[0]?.Subnets?.[0]?.Policies?.find((p) => p.Type === 'VSID')?.Settings?.['IsolationId'];
      return { name: n.Name ?? '', id: n.ID, type: n.Type ?? '', subnets, ...(vsid === undefined ? {} : { vsid: Number(vsid) }), net: n };
    });
    // The same matcher ensureNetwork reuses by: an adopted network it rejected would be deleted.
    const decision = decideSubnetHolder(summaries, { name: this.name, type: 'Overlay', subnet, vni: cfg.vni }, (s) =>
      overlayMatches(s.net, subnet, cfg.vni, cfg.port, wantAdapter),
    );
    if (decision.kind === 'none') return undefined;
    const network = decision.network.net;
    if (decision.kind === 'replace') return { kind: 'replace', network };
    deps.log.warn("adopting the HNS network that already holds this node's subnet instead of creating a second one; set Backend.Name in net-conf.json to it", {
      network: decision.network.name,
      id: decision.network.id,
      subnet,
      configured: this.name,
    });
    this.name = decision.network.name;
    return { kind: 'adopt', network };
  }
}
