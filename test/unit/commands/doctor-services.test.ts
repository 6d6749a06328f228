// Which load balancers kube-proxy (winkernel proxier.go syncProxyRules) makes for a Service port, and which
// of them doctor names missing (src/commands/doctor-services.ts, whose header cites each rule).
import { describe, expect, it } from '@jest/globals';
import { frontendsOf, frontendsWithoutLoadBalancer, type ServicePortFact } from '../../../src/commands/doctor-services.js';
import type { HcnLoadBalancer } from '../../../src/hns/schema.js';

const port = (over: Partial<ServicePortFact> = {}): ServicePortFact => ({
  namespace: 'default',
  name: 'web',
  clusterIP: '10.96.0.20',
  protocol: 'TCP',
  port: 80,
  nodePort: 0,
  externalIPs: [],
  ingressIPs: [],
  ready: 1,
  localReady: 0,
  trafficLocal: false,
  externalLocal: false,
  ...over,
});

/** A load balancer as kube-proxy makes one (hns.go getLoadBalancer): no FrontendVIPs for a NodePort's. */
const lb = (vip: string, protocol: number, externalPort: number): HcnLoadBalancer => ({
  ...(vip ? { FrontendVIPs: [vip] } : {}),
  PortMappings: [{ Protocol: protocol, InternalPort: 8080, ExternalPort: externalPort }],
});

describe('frontendsOf: the load balancers kube-proxy makes for a Service port', () => {
  it.each<[string, Partial<ServicePortFact>, string[]]>([
    ['ClusterIP with a ready endpoint', {}, ['ClusterIP 10.96.0.20:80']],
    ['no ready endpoint: none at all', { ready: 0, nodePort: 30080, externalIPs: ['192.0.2.1'] }, []],
    ['NodePort', { nodePort: 30080 }, ['ClusterIP 10.96.0.20:80', 'NodePort :30080']],
    [
      'LoadBalancer: NodePort, external and ingress IPs',
      { nodePort: 30080, externalIPs: ['192.0.2.1'], ingressIPs: ['203.0.113.7'] },
      ['ClusterIP 10.96.0.20:80', 'NodePort :30080', 'externalIP 192.0.2.1:80', 'ingress 203.0.113.7:80'],
    ],
    ['internalTrafficPolicy Local, no endpoint here: the others still', { trafficLocal: true, nodePort: 30080 }, ['NodePort :30080']],
    ['internalTrafficPolicy Local, an endpoint here', { trafficLocal: true, localReady: 1 }, ['ClusterIP 10.96.0.20:80']],
    ['externalTrafficPolicy Local, no endpoint here: ClusterIP only', { externalLocal: true, nodePort: 30080, externalIPs: ['192.0.2.1'] }, ['ClusterIP 10.96.0.20:80']],
    ['externalTrafficPolicy Local, an endpoint here', { externalLocal: true, localReady: 1, nodePort: 30080 }, ['ClusterIP 10.96.0.20:80', 'NodePort :30080']],
  ])('%s', (_, over, want) => {
    expect(frontendsOf(port(over)).map((f) => `${f.kind} ${f.vip}:${f.port}`)).toEqual(want);
  });
});

describe('frontendsWithoutLoadBalancer', () => {
  const dns = (protocol: 'TCP' | 'UDP') => port({ namespace: 'kube-system', name: 'kube-dns', clusterIP: '10.96.0.10', port: 53, protocol });
  it.each<[string, ServicePortFact[], HcnLoadBalancer[], string[]]>([
    ['all there', [port(), dns('UDP')], [lb('10.96.0.20', 6, 80), lb('10.96.0.10', 17, 53)], []],
    ['kube-dns first, then by name', [port(), dns('UDP'), dns('TCP')], [], ['kube-dns 53/TCP ClusterIP', 'kube-dns 53/UDP ClusterIP', 'web 80/TCP ClusterIP']],
    ['the protocol must match (UDP 17, TCP 6)', [dns('UDP')], [lb('10.96.0.10', 6, 53)], ['kube-dns 53/UDP ClusterIP']],
    ['the port is the Service port, not the target', [port()], [lb('10.96.0.20', 6, 8080)], ['web 80/TCP ClusterIP']],
    ['a NodePort is a load balancer without a FrontendVIP', [port({ nodePort: 30080 })], [lb('10.96.0.20', 6, 80), lb('10.96.0.20', 6, 30080)], ['web 80/TCP NodePort']],
    ['a NodePort there', [port({ nodePort: 30080 })], [lb('10.96.0.20', 6, 80), lb('', 6, 30080)], []],
    ['an external IP is its own load balancer', [port({ externalIPs: ['192.0.2.1'] })], [lb('10.96.0.20', 6, 80)], ['web 80/TCP externalIP']],
  ])('%s', (_, ports, lbs, want) => {
    expect(frontendsWithoutLoadBalancer(ports, lbs).map((f) => `${f.service.name} ${f.service.port}/${f.service.protocol} ${f.kind}`)).toEqual(want);
  });
});
