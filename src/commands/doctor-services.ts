// `flanneld doctor`'s Service rows, pure over the facts of ./doctor-gather.ts:
//  * `service-load-balancers`: the node's HNS load balancers against the cluster's Services, as kube-proxy's
//    winkernel proxier programs them (kubernetes pkg/proxy/winkernel/proxier.go syncProxyRules, 1.25 and
//    current; hns.go getLoadBalancer). Per Service port, on every node, once it has an endpoint to send to
//    (none: it logs "Endpoint information not available for service, not applying any policy" and makes none):
//      - ClusterIP: `FrontendVIPs [clusterIP]`, one port mapping {Protocol, InternalPort targetPort, ExternalPort
//        port};
//      - NodePort (`nodePort` > 0, so also a LoadBalancer Service's): no FrontendVIP (vip ""), ExternalPort
//        nodePort;
//      - each `spec.externalIPs` address and each `status.loadBalancer.ingress[].ip`: `FrontendVIPs [ip]`,
//        ExternalPort port;
//      - headless Services (clusterIP None) and ExternalName ones get none (kube-proxy's ServiceChangeTracker
//        skips them), nor do ports of a protocol HNS does not balance.
//    It takes ready endpoints only ("only ready and not terminating endpoints were added to HNS", hns.go;
//    EndpointConditions.ready: "nil should be interpreted as true"). Which endpoints a frontend takes can
//    narrow to the node's own (internalTrafficPolicy Local for the ClusterIP, in current releases
//    `clusterIPEndpoints = hnsLocalEndpoints`; externalTrafficPolicy Local, i.e. localTrafficDSR, or the
//    `preserve-destination: "true"` annotation for the others: newServiceInfo, when HNS supports DSR), so
//    such a frontend is expected only with a ready endpoint on this node: doctor never blames kube-proxy for a
//    load balancer it may rightly not make. The frontends with none on this node are named, kube-dns first
//    (every pod's DNS). kube-proxy owns them: the fix is kube-proxy's, never the agent's. IPv4 only (the
//    agent's Service view is IPv4's; a dual-stack Service's IPv6 frontends are not judged).
//  * `leaked-endpoints`: local endpoints on the agent's network that no pod holds: in no HCN namespace (the CNI
//    plugin attaches a pod's endpoint to the pod's namespace, and DEL removes it: containernetworking/plugins
//    pkg/hns/endpoint_windows.go AddHcnEndpoint, RemoveHcnEndpoint), holding no host-local reservation
//    (host-local writes it before the endpoint is made and frees it on DEL) and no IP of a pod on this node, and not
//    the agent's own (source VIP, host endpoint, gateways). They keep their address from the next pod that
//    host-local gives it to. Judged only when every read worked (an unreadable read is unknown, as for
//    reservations), and removable (`--fix`) only once host-local's store has not changed for the grace period:
//    a pod ADD or DEL under way changes it (doctor.ts DEFAULT_GRACE_SECONDS).
import { hostEndpointAddress } from '../backends/hostgw/backend.js';
import { sourceVipEndpointName } from '../backends/vxlan/source-vip.js';
import { nthAddress6 } from '../basics/ip6.js';
import type { HcnLoadBalancer } from '../hns/schema.js';
import { canonicalIp, fail, gatewaysOf, isErr, listed, ok, skip, warn, type CheckRow, type DoctorFacts, type EndpointFact } from './doctor-checks.js';

/** One port of a Service as kube-proxy would program it. */
export interface ServicePortFact {
  namespace: string;
  name: string;
  clusterIP: string;
  protocol: 'TCP' | 'UDP' | 'SCTP';
  port: number;
  /** spec.ports[].nodePort; 0 when none. */
  nodePort: number;
  /** spec.externalIPs (IPv4). */
  externalIPs: string[];
  /** status.loadBalancer.ingress[].ip (IPv4). */
  ingressIPs: string[];
  /** Ready endpoints of the port in the Service's EndpointSlices, all and on this node. */
  ready: number;
  localReady: number;
  /** internalTrafficPolicy Local: the ClusterIP frontend may take the node's own endpoints only. */
  trafficLocal: boolean;
  /** externalTrafficPolicy Local or preserve-destination: the other frontends may take the node's own only. */
  externalLocal: boolean;
}

/** One load balancer kube-proxy makes for a Service port: `vip` '' is the NodePort one (no FrontendVIP). */
export interface ServiceFrontend {
  service: ServicePortFact;
  kind: 'ClusterIP' | 'NodePort' | 'externalIP' | 'ingress';
  vip: string;
  port: number;
}

/** IANA protocol numbers of the port mapping (hcsshim hcn/hcnloadbalancer.go "TCP = 6, UDP = 17"). */
const PROTOCOL_NUMBER = { TCP: 6, UDP: 17, SCTP: 132 } as const;

function frontendText(f: ServiceFrontend): string {
  const svc = `${f.service.namespace}/${f.service.name}`;
  const proto = f.service.protocol;
  if (f.kind === 'NodePort') return `${svc} NodePort ${f.port}/${proto}`;
  return `${svc} ${f.vip}:${f.port}/${proto}${f.kind === 'ClusterIP' ? '' : ` (${f.kind})`}`;
}

/** kube-dns first (every pod's DNS), then by namespace, name, port, protocol; ClusterIP before the others. */
const KIND_ORDER = { ClusterIP: 0, NodePort: 1, externalIP: 2, ingress: 3 } as const;
function dnsFirst(a: ServiceFrontend, b: ServiceFrontend): number {
  const dns = (f: ServiceFrontend) => (f.service.namespace === 'kube-system' && f.service.name === 'kube-dns' ? 0 : 1);
  const name = (f: ServiceFrontend) => `${f.service.namespace}/${f.service.name}`;
  return (
    dns(a) - dns(b) ||
    name(a).localeCompare(name(b)) ||
    a.service.port - b.service.port ||
    a.service.protocol.localeCompare(b.service.protocol) ||
    KIND_ORDER[a.kind] - KIND_ORDER[b.kind] ||
    a.vip.localeCompare(b.vip)
  );
}

/** The load balancers kube-proxy makes for a Service port on this node (the rule in the header). */
export function frontendsOf(p: ServicePortFact): ServiceFrontend[] {
  const out: ServiceFrontend[] = [];
  if ((p.trafficLocal ? p.localReady : p.ready) > 0) out.push({ service: p, kind: 'ClusterIP', vip: p.clusterIP, port: p.port });
  if (p.ready === 0 || (p.externalLocal && p.localReady === 0)) return out;
  if (p.nodePort > 0) out.push({ service: p, kind: 'NodePort', vip: '', port: p.nodePort });
  for (const ip of p.externalIPs) out.push({ service: p, kind: 'externalIP', vip: ip, port: p.port });
  for (const ip of p.ingressIPs) out.push({ service: p, kind: 'ingress', vip: ip, port: p.port });
  return out;
}

/** A load balancer for the frontend: its VIP the FrontendVIPs (none for NodePort), a mapping of its protocol and port. */
function hasLoadBalancer(f: ServiceFrontend, lbs: readonly HcnLoadBalancer[]): boolean {
  const proto = PROTOCOL_NUMBER[f.service.protocol];
  return lbs.some((lb) => {
    const vips = lb.FrontendVIPs ?? [];
    const vipMatches = f.vip === '' ? vips.length === 0 : vips.includes(f.vip);
    return vipMatches && (lb.PortMappings ?? []).some((m) => (m.Protocol ?? 0) === proto && (m.ExternalPort ?? 0) === f.port);
  });
}

/** The load balancers kube-proxy would make that are not on this node, kube-dns first. */
export function frontendsWithoutLoadBalancer(ports: readonly ServicePortFact[], lbs: readonly HcnLoadBalancer[]): ServiceFrontend[] {
  return ports
    .flatMap(frontendsOf)
    .filter((f) => !hasLoadBalancer(f, lbs))
    .sort(dnsFirst);
}

export function serviceLoadBalancerRow(f: DoctorFacts): CheckRow {
  const id = 'service-load-balancers';
  if (f.servicePorts === undefined) return skip(id, `the Services are not readable without API access (${f.cluster.error || 'no kubeconfig'}); pass --kubeconfig-file`);
  if (isErr(f.servicePorts)) return skip(id, `the Services could not be read: ${f.servicePorts.error}`);
  if (isErr(f.loadBalancers)) return skip(id, `HNS would not list its load balancers: ${f.loadBalancers.error}`);
  const wanted = f.servicePorts.flatMap(frontendsOf);
  const missing = frontendsWithoutLoadBalancer(f.servicePorts, f.loadBalancers);
  const noEndpoints = f.servicePorts.filter((p) => frontendsOf(p).length === 0).length;
  const idle = noEndpoints ? `; ${noEndpoints} Service ports without ready endpoints (kube-proxy makes none for them)` : '';
  if (missing.length === 0) return ok(id, `the ${wanted.length} load balancers kube-proxy makes for the Services are on this node (HNS holds ${f.loadBalancers.length})${idle}`);
  return fail(
    id,
    `${missing.length} of ${wanted.length} load balancers kube-proxy makes for the Services are not on this node, so traffic to them here goes nowhere: ${listed(missing.map(frontendText))}${idle}`,
    'kube-proxy makes them: check it runs (Get-Service kubeproxy) and its log ("Policy creation failed"). Just after an HNS restart HNS restores them by itself: look again in a few minutes; if they stay missing, Restart-Service kubeproxy (or run flanneld with --restart-service-on-hns-restart=kubeproxy)',
  );
}

/** The addresses and names of the agent's own endpoints on its network (never judged leaked). */
function agentsOwn(f: DoctorFacts): { ips: Set<string>; names: Set<string> } {
  const ips = new Set(gatewaysOf(f.lease));
  const names = new Set<string>();
  if (!isErr(f.netConf)) {
    if (f.netConf.type === 'vxlan') names.add(sourceVipEndpointName(f.netConf.name));
    else names.add(`${f.netConf.name}_ep`);
    if (f.netConf.type === 'host-gw' && f.lease) ips.add(hostEndpointAddress(f.lease.subnet));
  }
  if (f.lease?.ipv6Subnet) ips.add(nthAddress6(f.lease.ipv6Subnet, 2));
  for (const x of f.sourceVipFiles) if (x.ip) ips.add(x.ip);
  if (f.agent.status?.sourceVip) ips.add(f.agent.status.sourceVip);
  return { ips: new Set([...ips].map(canonicalIp)), names };
}

/** Why the leaked-endpoint judgement cannot be made (a read that failed, a fact not known), or undefined. */
function notJudgeable(f: DoctorFacts): string | undefined {
  if (isErr(f.netConf)) return 'net-conf.json is unreadable';
  if (isErr(f.networks) || !f.networks.some((n) => n.name === (f.netConf as { name: string }).name)) return `no HNS network ${f.netConf.name}`;
  if (isErr(f.endpoints)) return `HNS would not list the endpoints on ${f.netConf.name} (${f.endpoints.error})`;
  if (f.podIPs === undefined) return `the node's pods are not readable without API access (${f.cluster.error || 'no node name'})`;
  if (isErr(f.podIPs)) return `the node's pods could not be read: ${f.podIPs.error}`;
  if (!f.ipam.dir) return '--cni-ipam-data-dir is off (which addresses host-local holds is not known)';
  if (f.ipam.reservations === undefined || f.ipam.dirAgeMs === undefined) return `${f.ipam.dir} does not exist yet`;
  if (isErr(f.ipam.reservations)) return `${f.ipam.dir}: ${f.ipam.reservations.error}`;
  if (f.ipam.reservations.some((r) => r.error !== undefined)) return `${f.ipam.dir} holds files doctor cannot read as reservations`;
  return undefined;
}

/** The local endpoints on the agent's network no pod holds (the header's rule); [] when not judgeable. */
export function leakedEndpoints(f: DoctorFacts): EndpointFact[] {
  if (notJudgeable(f) !== undefined) return [];
  const own = agentsOwn(f);
  const reserved = new Set((f.ipam.reservations as { ip: string }[]).map((r) => canonicalIp(r.ip)));
  const pods = new Set((f.podIPs as string[]).map(canonicalIp));
  return (f.endpoints as EndpointFact[]).filter(
    (e) =>
      !e.remote &&
      !e.namespace &&
      !(e.name !== undefined && own.names.has(e.name)) &&
      e.ips.length > 0 &&
      e.ips.every((ip) => !own.ips.has(canonicalIp(ip)) && !reserved.has(canonicalIp(ip)) && !pods.has(canonicalIp(ip))),
  );
}

/** The endpoints --fix removes: leaked, and host-local's store unchanged for `graceMs`. */
export function endpointsToRemove(f: DoctorFacts, graceMs: number): EndpointFact[] {
  return (f.ipam.dirAgeMs ?? 0) >= graceMs ? leakedEndpoints(f).filter((e) => e.id !== undefined) : [];
}

const endpointText = (e: EndpointFact) => `${e.id ?? '?'} ${e.ips.join('+')}${e.name ? ` (${e.name})` : ''}`;

export function leakedEndpointsRow(f: DoctorFacts): CheckRow {
  const id = 'leaked-endpoints';
  const why = notJudgeable(f);
  if (why) return skip(id, why);
  const leaks = leakedEndpoints(f);
  const net = (f.netConf as { name: string }).name;
  if (leaks.length === 0) return ok(id, `every local endpoint on ${net} belongs to a pod or the agent`);
  const grace = Math.round(f.graceMs / 1000);
  const age = Math.round((f.ipam.dirAgeMs ?? 0) / 1000);
  const what = `${leaks.length} local endpoints on ${net} belong to no pod (no HCN namespace, no pod IP on this node) and hold no host-local reservation: ${listed(leaks.map(endpointText))}; host-local may give their address to a new pod, whose endpoint HNS then refuses`;
  if ((f.ipam.dirAgeMs ?? 0) < f.graceMs)
    return warn(
      id,
      `${what}. host-local's store changed ${age} s ago (a pod being added or deleted)`,
      `look again in ${grace} s; then flanneld doctor --fix --grace-period=${grace} removes them`,
    );
  return warn(id, what, `run flanneld doctor --fix --grace-period=${grace}: it removes them (HcnDeleteEndpoint), or Remove-HnsEndpoint each`);
}

/** The Service rows, after runChecks' (doctor.ts). */
export function serviceRows(f: DoctorFacts): CheckRow[] {
  return [serviceLoadBalancerRow(f), leakedEndpointsRow(f)];
}
