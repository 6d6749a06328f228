// `flanneld doctor`'s Service rows on the simulated node (src/commands/doctor-services.ts): kube-proxy's load
// balancers (HCN objects in the node's state file, made as kube-proxy makes them) against the cluster's
// Services and EndpointSlices (served by the fake API server, read with the kubeconfig doctor is given), and
// the local endpoints on the agent's network that no pod holds, which --fix removes by the rules it frees
// reservations by. The command runs in-process with the agent's flags, through the seams the agent uses.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../support/cluster.js';
import { daemonSetRbac } from '../support/deploy-rbac.js';
import { DoctorNode, NODE, type DoctorRun } from '../support/doctor-node.js';
import { editState } from '../support/sim-dataplane.js';

const NET = 'flannel.4096';

/** A Service as `kubectl get svc -o json` shows one (core/v1). */
const service = (
  namespace: string,
  name: string,
  clusterIP: string,
  ports: { name: string; port: number; protocol: string; nodePort?: number }[],
  extra: Record<string, unknown> = {},
) => ({
  metadata: { name, namespace },
  spec: { clusterIP, ports: ports.map((p) => ({ ...p, targetPort: p.port })), ...extra },
});

/** Its EndpointSlice (discovery.k8s.io/v1), endpoints `[ip, node, ready]`. */
const slice = (namespace: string, service: string, ports: string[], endpoints: [string, string, boolean][]) => ({
  metadata: { name: `${service}-abcde`, namespace, labels: { 'kubernetes.io/service-name': service } },
  addressType: 'IPv4',
  ports: ports.map((name) => ({ name, protocol: 'TCP' })),
  endpoints: endpoints.map(([ip, nodeName, ready]) => ({ addresses: [ip], nodeName, conditions: { ready } })),
});

describe('flanneld doctor: Services and the endpoints no pod holds', () => {
  let node: DoctorNode;
  const ipam = () => join(node.paths.ipam, NET);
  const sim = () => node.sim();
  const doctor = (extra: string[] = [], without: RegExp = /^$/) => node.doctor([...node.args.filter((a) => !without.test(a)), ...extra]);
  const row = (d: DoctorRun, id: string) => d.rows.find((r) => r.id === id)!;

  /** A load balancer as kube-proxy makes one for a Service port (winkernel hns.go getLoadBalancer). */
  function kubeProxyLoadBalancer(vip: string, protocol: number, port: number): void {
    sim().createLoadBalancer('HcnCreateLoadBalancer', {
      HostComputeEndpoints: ['6B0D3C5E-7A1F-4B2C-9D8E-0F1A2B3C4D5E'],
      SourceVIP: '10.244.7.2',
      ...(vip ? { FrontendVIPs: [vip] } : {}), // a NodePort's has none (hns.go getLoadBalancer: vip "")
      PortMappings: [{ Protocol: protocol, InternalPort: port, ExternalPort: port }],
      SchemaVersion: { Major: 2, Minor: 0 },
    });
  }

  /** A local endpoint on the agent's network (as win-overlay makes a pod's), in the pod's namespace or none. */
  function localEndpoint(ip: string, opts: { namespace?: boolean } = {}): string {
    const s = sim();
    const net = s.getNetworkByName(NET)!;
    const ep = s.createEndpoint('HcnCreateEndpoint', net.ID!, { Name: `pod-${ip}_${NET}`, IpConfigurations: [{ IpAddress: ip }], SchemaVersion: { Major: 2, Minor: 0 } });
    if (opts.namespace)
      s.modifyNamespace('HcnModifyNamespace', s.createNamespace('HcnCreateNamespace', {}).ID, { ResourceType: 'Endpoint', RequestType: 'Add', Settings: { EndpointId: ep.ID } });
    return ep.ID!;
  }

  /** host-local's store last changed `seconds` ago (a reservation made or freed changes the directory). */
  function storeChanged(seconds: number): void {
    const t = (Date.now() - seconds * 1000) / 1000;
    utimesSync(ipam(), t, t);
  }

  beforeAll(async () => {
    node = await DoctorNode.start();
    const agent = node.startAgent();
    await waitFor(() => agent.agent.isReady, 'the agent ready', 20_000);
    await agent.stop();
    mkdirSync(node.paths.conf, { recursive: true });
    // The cluster the kube-proxy recordings ran in (test/fixtures/kube-proxy-traces), and more: a headless
    // Service, one whose endpoints are not ready, one with internalTrafficPolicy Local and no endpoint here.
    const api = node.cluster.api;
    api.addService(
      service('kube-system', 'kube-dns', '10.96.0.10', [
        { name: 'dns', port: 53, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53, protocol: 'TCP' },
      ]),
    );
    api.addEndpointSlice(slice('kube-system', 'kube-dns', ['dns', 'dns-tcp'], [['10.244.1.2', 'linux-1', true]]));
    api.addService(service('default', 'web', '10.96.0.20', [{ name: 'http', port: 80, protocol: 'TCP' }]));
    api.addEndpointSlice(slice('default', 'web', ['http'], [['10.244.1.4', 'linux-1', true]]));
    api.addService(service('default', 'db', '10.96.0.30', [{ name: 'pg', port: 5432, protocol: 'TCP' }]));
    api.addEndpointSlice(slice('default', 'db', ['pg'], [['10.244.1.5', 'linux-1', false]]));
    api.addService(service('default', 'headless', 'None', [{ name: 'http', port: 80, protocol: 'TCP' }]));
    api.addService(service('default', 'node-local', '10.96.0.40', [{ name: 'http', port: 80, protocol: 'TCP' }], { internalTrafficPolicy: 'Local' }));
    api.addEndpointSlice(slice('default', 'node-local', ['http'], [['10.244.1.6', 'linux-1', true]]));
    node.keep();
  }, 60_000);

  afterAll(() => node.stop());

  it('names the Services kube-proxy has no load balancer for on this node, kube-dns first; ok once they are there', async () => {
    node.restore();
    let d = await doctor();
    const r = row(d, 'service-load-balancers');
    expect(r.status).toBe('fail');
    expect(r.saw).toContain('3 of 3 load balancers kube-proxy makes for the Services are not on this node');
    // kube-dns first, though default/ sorts before kube-system/: every pod's DNS goes through it.
    expect(r.saw).toContain(': kube-system/kube-dns 10.96.0.10:53/TCP, kube-system/kube-dns 10.96.0.10:53/UDP, default/web 10.96.0.20:80/TCP;');
    expect(r.saw).toContain('2 Service ports without ready endpoints');
    expect(r.fix).toContain('Restart-Service kubeproxy');
    expect(d.code).toBe(1);

    kubeProxyLoadBalancer('10.96.0.20', 6, 80);
    kubeProxyLoadBalancer('10.96.0.10', 17, 53);
    kubeProxyLoadBalancer('10.96.0.10', 6, 53);
    d = await doctor();
    expect(row(d, 'service-load-balancers')).toMatchObject({
      status: 'ok',
      saw: expect.stringContaining('the 3 load balancers kube-proxy makes for the Services are on this node (HNS holds 3)'),
    });
  });

  it('without the kubeconfig the Service row is skipped, saying why; when HNS will not list the load balancers too', async () => {
    node.restore();
    const d = await doctor([], /^--kubeconfig-file=/);
    expect(row(d, 'service-load-balancers')).toMatchObject({ status: 'skip', saw: expect.stringMatching(/not readable without API access .*pass --kubeconfig-file/) });
    editState(sim(), (s) => void (s.faults = [{ op: 'HcnEnumerateLoadBalancers', hresult: '0x80070005', remaining: -1 }]));
    expect(row(await doctor(), 'service-load-balancers')).toMatchObject({ status: 'skip', saw: expect.stringContaining('HNS would not list its load balancers') });
  });

  // `kubectl exec ... flanneld doctor` in the DaemonSet pod (deploy/README.md) runs with the pod's ServiceAccount:
  // the fake API server grants only deploy/base's ClusterRole (RBAC RuleAllows, src/demo/kube-fake/rbac-startup.ts).
  it("in the DaemonSet pod, with only its ServiceAccount's ClusterRole, both rows read the API; without the Services rules the row names the fix", async () => {
    node.restore();
    const api = node.cluster.api;
    const { rules } = daemonSetRbac();
    expect(rules.length).toBeGreaterThan(0);
    try {
      api.rbacRules = rules;
      let d = await doctor();
      expect(row(d, 'service-load-balancers')).toMatchObject({ status: 'fail', saw: expect.stringContaining('3 of 3 load balancers kube-proxy makes') });
      expect(row(d, 'leaked-endpoints').status).toBe('ok');
      // Not vacuous: a ClusterRole without them (as deploy/base had) is refused, and the row says what to apply.
      api.rbacRules = rules.filter((r) => !r.resources?.some((x) => x === 'services' || x === 'endpointslices'));
      d = await doctor();
      expect(row(d, 'service-load-balancers')).toMatchObject({ status: 'skip', saw: expect.stringContaining('services is forbidden') });
      expect(row(d, 'service-load-balancers').saw).toContain('services: get, list; endpointslices.discovery.k8s.io: get, list');
    } finally {
      api.rbacRules = undefined;
    }
  });

  it('--fix removes a local endpoint no pod holds once host-local’s store is quiet, never a pod’s, one being added, or the agent’s', async () => {
    node.restore();
    const leaked = localEndpoint('10.244.7.60');
    localEndpoint('10.244.7.61', { namespace: true }); // a pod's: in its namespace
    localEndpoint('10.244.7.62'); // being added: host-local reserved its address first
    writeFileSync(join(ipam(), '10.244.7.62'), 'f00dfeed\r\neth0');
    localEndpoint('10.244.7.63'); // a pod the API server lists on this node with that IP
    node.cluster.api.addPod({
      metadata: { name: 'web-1', namespace: 'default' },
      spec: { nodeName: NODE },
      status: { phase: 'Running', podIP: '10.244.7.63', podIPs: [{ ip: '10.244.7.63' }] },
    });
    const before = sim().listEndpoints().length;

    // The store just changed (a pod being added or deleted): named, nothing removed.
    storeChanged(5);
    let d = await doctor(['--fix']);
    expect(row(d, 'leaked-endpoints')).toMatchObject({ status: 'warn', saw: expect.stringContaining(`1 local endpoints on ${NET} belong to no pod`) });
    expect(row(d, 'leaked-endpoints').saw).toContain(`${leaked} 10.244.7.60`);
    expect(row(d, 'leaked-endpoints').saw).toContain("host-local's store changed");
    expect(d.removed).toEqual([]);
    expect(sim().listEndpoints()).toHaveLength(before);

    // Quiet for the grace period: only that one is removed.
    storeChanged(3600);
    d = await doctor(['--fix']);
    expect(d.removed).toEqual([{ id: leaked, ips: ['10.244.7.60'], name: `pod-10.244.7.60_${NET}` }]);
    expect(sim().getEndpoint(leaked)).toBeUndefined();
    expect(sim().listEndpoints()).toHaveLength(before - 1);
    expect(row(d, 'leaked-endpoints')).toMatchObject({ status: 'ok' });
  });

  it('a read that failed proves nothing: endpoints HNS will not list, or pods without the kubeconfig: skipped, nothing removed', async () => {
    node.restore();
    localEndpoint('10.244.7.70');
    storeChanged(3600);
    const before = sim().listEndpoints().length;
    let d = await doctor(['--fix'], /^--kubeconfig-file=/);
    expect(row(d, 'leaked-endpoints')).toMatchObject({ status: 'skip', saw: expect.stringContaining("the node's pods are not readable without API access") });
    expect(d.removed).toEqual([]);
    editState(sim(), (s) => void (s.faults = [{ op: 'HcnEnumerateEndpoints', hresult: '0x80070005', remaining: -1 }]));
    d = await doctor(['--fix']);
    expect(row(d, 'leaked-endpoints')).toMatchObject({ status: 'skip', saw: expect.stringContaining('HNS would not list the endpoints') });
    expect(d.removed).toEqual([]);
    editState(sim(), (s) => void delete s.faults);
    expect(sim().listEndpoints()).toHaveLength(before);
  });

  // Last: the Services it adds stay in the API server.
  it('a LoadBalancer Service needs its NodePort, external IP and ingress IP load balancers too; externalTrafficPolicy Local only with an endpoint here', async () => {
    node.restore();
    kubeProxyLoadBalancer('10.96.0.20', 6, 80);
    kubeProxyLoadBalancer('10.96.0.10', 17, 53);
    kubeProxyLoadBalancer('10.96.0.10', 6, 53);
    const api = node.cluster.api;
    api.addService({
      ...service('default', 'shop', '10.96.0.50', [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30050 }], { type: 'LoadBalancer', externalIPs: ['192.0.2.10'] }),
      status: { loadBalancer: { ingress: [{ ip: '203.0.113.7' }] } },
    });
    api.addEndpointSlice(slice('default', 'shop', ['http'], [['10.244.1.7', 'linux-1', true]]));
    // externalTrafficPolicy Local with no endpoint here: only its ClusterIP load balancer is expected.
    api.addService(service('default', 'edge', '10.96.0.60', [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30060 }], { type: 'NodePort', externalTrafficPolicy: 'Local' }));
    api.addEndpointSlice(slice('default', 'edge', ['http'], [['10.244.1.8', 'linux-1', true]]));
    let d = await doctor();
    expect(row(d, 'service-load-balancers').saw).toContain(
      '5 of 8 load balancers kube-proxy makes for the Services are not on this node, so traffic to them here goes nowhere: default/edge 10.96.0.60:80/TCP, default/shop 10.96.0.50:80/TCP, default/shop NodePort 30050/TCP, default/shop 192.0.2.10:80/TCP (externalIP), default/shop 203.0.113.7:80/TCP (ingress);',
    );
    kubeProxyLoadBalancer('10.96.0.60', 6, 80);
    kubeProxyLoadBalancer('10.96.0.50', 6, 80);
    kubeProxyLoadBalancer('', 6, 30050);
    kubeProxyLoadBalancer('192.0.2.10', 6, 80);
    d = await doctor();
    expect(row(d, 'service-load-balancers').saw).toMatch(/^1 of 8 .*: default\/shop 203\.0\.113\.7:80\/TCP \(ingress\);/);
    kubeProxyLoadBalancer('203.0.113.7', 6, 80);
    expect(row(await doctor(), 'service-load-balancers').status).toBe('ok');
  });
});
