// Projections of Pods, Namespaces and NetworkPolicies from the API server's JSON (src/netpol/types.ts): what
// the API server stores projects as written; anything else is refused with a reason, never a throw, and a
// policy whose rules cannot be read still isolates what it selects.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { NETPOL_BOUNDS, projectNamespace, projectNetworkPolicy, projectPod } from '../../../src/netpol/types.js';

const meta = { namespace: 'x', name: 'p', uid: 'u1' };

describe('projectPod', () => {
  it('keeps what policy needs: labels, addresses (canonical), hostNetwork, node, phase, named ports of containers and sidecars', () => {
    const raw = {
      metadata: { namespace: 'x', name: 'a', uid: 'u', labels: { pod: 'a', 'app.kubernetes.io/name': 'web' } },
      spec: {
        nodeName: 'win-1',
        containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 8080 }, { containerPort: 9090 }, { name: 'dns', containerPort: 53, protocol: 'UDP' }] }],
        initContainers: [
          { name: 'init', ports: [{ name: 'init-port', containerPort: 1 }] },
          { name: 'sidecar', restartPolicy: 'Always', ports: [{ name: 'metrics', containerPort: 9100 }] },
        ],
      },
      status: { phase: 'Running', podIPs: [{ ip: '10.244.1.5' }, { ip: 'FD00:0:0::5' }] },
    };
    expect(projectPod(raw)).toEqual({
      ok: true,
      value: {
        namespace: 'x',
        name: 'a',
        uid: 'u',
        labels: { pod: 'a', 'app.kubernetes.io/name': 'web' },
        podIPs: ['10.244.1.5', 'fd00::5'],
        hostNetwork: false,
        nodeName: 'win-1',
        phase: 'Running',
        ports: [
          { name: 'http', protocol: 'TCP', containerPort: 8080 },
          { name: 'dns', protocol: 'UDP', containerPort: 53 },
          { name: 'metrics', protocol: 'TCP', containerPort: 9100 },
        ],
      },
    });
  });

  it('falls back to status.podIP and has no address before one is assigned', () => {
    const p = projectPod({ metadata: { namespace: 'x', name: 'a', uid: 'u' }, status: { podIP: '10.0.0.1' } });
    expect(p.ok && p.value.podIPs).toEqual(['10.0.0.1']);
    const pending = projectPod({ metadata: { namespace: 'x', name: 'a', uid: 'u' }, spec: { hostNetwork: true }, status: { phase: 'Pending' } });
    expect(pending.ok && [pending.value.podIPs, pending.value.hostNetwork]).toEqual([[], true]);
  });

  it.each([
    ['not an object', 'pod', 'the Pod is not an object'],
    ['no metadata', {}, 'metadata is missing'],
    ['no namespace', { metadata: { name: 'a', uid: 'u' } }, 'metadata.namespace'],
    ['no uid', { metadata: { namespace: 'x', name: 'a' } }, 'metadata.uid'],
    ['a label value with a space', { metadata: { ...meta, labels: { a: 'b c' } } }, 'the value of a is not a label value'],
    ['a label key with two slashes', { metadata: { ...meta, labels: { 'a/b/c': 'x' } } }, 'is not a label key'],
    ['labels not an object', { metadata: { ...meta, labels: ['a'] } }, 'metadata.labels is not an object'],
    ['a bad address', { metadata: meta, status: { podIPs: [{ ip: '10.0.0.256' }] } }, 'is not an IP address'],
    ['two IPv4 addresses', { metadata: meta, status: { podIPs: [{ ip: '10.0.0.1' }, { ip: '10.0.0.2' }] } }, 'two addresses of one family'],
    ['three addresses', { metadata: meta, status: { podIPs: [{ ip: '10.0.0.1' }, { ip: '::1' }, { ip: '::2' }] } }, 'more than 2'],
    ['a port without number', { metadata: meta, spec: { containers: [{ ports: [{ name: 'http' }] }] } }, 'containerPort is not a port number'],
    ['a port of an unknown protocol', { metadata: meta, spec: { containers: [{ ports: [{ name: 'h', containerPort: 1, protocol: 'ICMP' }] }] } }, 'is not TCP, UDP or SCTP'],
  ])('refuses %s, with a reason', (_what, raw, reason) => {
    const p = projectPod(raw);
    expect(p.ok).toBe(false);
    expect(!p.ok && p.reason).toContain(reason);
  });

  it('refuses more labels than its bound', () => {
    const labels = Object.fromEntries(Array.from({ length: NETPOL_BOUNDS.labels + 1 }, (_, i) => [`k${i}`, 'v']));
    expect(projectPod({ metadata: { ...meta, labels } })).toEqual({
      ok: false,
      reason: `metadata.labels has ${NETPOL_BOUNDS.labels + 1} entries, more than ${NETPOL_BOUNDS.labels}`,
    });
  });

  it('never throws on hostile input', () => {
    fc.assert(
      fc.property(fc.anything({ maxDepth: 5 }), (v) => {
        expect(() => projectPod(v)).not.toThrow();
        expect(() => projectPod({ metadata: meta, spec: v, status: v })).not.toThrow();
        expect(() => projectNetworkPolicy({ metadata: meta, spec: v })).not.toThrow();
        expect(() => projectNetworkPolicy({ metadata: meta, spec: { ingress: [v], egress: [{ to: [v], ports: [v] }] } })).not.toThrow();
        expect(() => projectNamespace(v)).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });
});

describe('projectNamespace', () => {
  it('keeps the labels and the kubernetes.io/metadata.name label the control plane sets on every Namespace', () => {
    expect(projectNamespace({ metadata: { name: 'x', labels: { team: 'a' } } })).toEqual({
      ok: true,
      value: { name: 'x', labels: { team: 'a', 'kubernetes.io/metadata.name': 'x' } },
    });
    expect(projectNamespace({ metadata: { name: 'x', labels: { 'kubernetes.io/metadata.name': 'y' } } })).toEqual({
      ok: true,
      value: { name: 'x', labels: { 'kubernetes.io/metadata.name': 'x' } },
    });
  });
});

describe('projectNetworkPolicy', () => {
  it('keeps the spec as written: selectors, peers, ipBlock (canonical), ports by number, name and range', () => {
    const spec = {
      podSelector: { matchLabels: { role: 'db' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['a', 'b'] }] },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        {
          from: [
            { ipBlock: { cidr: '172.17.0.1/16', except: ['172.17.1.0/24'] } },
            { namespaceSelector: { matchLabels: { project: 'p' } } },
            { podSelector: { matchLabels: { role: 'frontend' } } },
          ],
          ports: [{ protocol: 'TCP', port: 6379 }, { port: 'http' }],
        },
      ],
      egress: [{ to: [{ ipBlock: { cidr: '2001:DB8::/64' } }], ports: [{ protocol: 'TCP', port: 32000, endPort: 32768 }] }],
    };
    expect(projectNetworkPolicy({ metadata: meta, spec })).toEqual({
      ok: true,
      value: {
        ...meta,
        spec: {
          podSelector: { matchLabels: { role: 'db' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['a', 'b'] }] },
          policyTypes: ['Ingress', 'Egress'],
          ingress: [
            {
              from: [
                { ipBlock: { cidr: '172.17.0.0/16', except: ['172.17.1.0/24'] } },
                { namespaceSelector: { matchLabels: { project: 'p' } } },
                { podSelector: { matchLabels: { role: 'frontend' } } },
              ],
              ports: [{ protocol: 'TCP', port: 6379 }, { port: 'http' }],
            },
          ],
          egress: [{ to: [{ ipBlock: { cidr: '2001:db8::/64' } }], ports: [{ protocol: 'TCP', port: 32000, endPort: 32768 }] }],
        },
      },
    });
  });

  it('an empty or missing podSelector selects everything; empty rules and lists are dropped as the API treats them', () => {
    expect(projectNetworkPolicy({ metadata: meta, spec: { ingress: [] } })).toEqual({ ok: true, value: { ...meta, spec: { podSelector: {} } } });
    expect(projectNetworkPolicy({ metadata: meta, spec: { podSelector: {}, ingress: [{ from: [], ports: [] }] } })).toEqual({
      ok: true,
      value: { ...meta, spec: { podSelector: {}, ingress: [{}] } },
    });
  });

  it.each([
    ['an unknown policyType', { policyTypes: ['Sideways'] }, 'not Ingress or Egress'],
    ['a bad podSelector operator', { podSelector: { matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] } }, 'is not In, NotIn, Exists or DoesNotExist'],
    ['In without values', { podSelector: { matchExpressions: [{ key: 'a', operator: 'In', values: [] }] } }, 'In needs values'],
    ['Exists with values', { podSelector: { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] } }, 'Exists takes no values'],
  ])('refuses a policy with %s (it cannot tell what it selects)', (_w, spec, reason) => {
    const p = projectNetworkPolicy({ metadata: meta, spec });
    expect(!p.ok && p.reason).toContain(reason);
  });

  it.each([
    ['a peer with ipBlock and a selector', { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8' }, podSelector: {} }] }] }, 'ipBlock cannot be combined'],
    ['an empty peer', { ingress: [{ from: [{}] }] }, 'names no peer'],
    ['an except outside the cidr', { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['11.0.0.0/8'] } }] }] }, 'is not inside 10.0.0.0/8'],
    ['an except equal to the cidr', { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['10.0.0.0/8'] } }] }] }, 'is not inside'],
    ['an except of the other family', { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['::/64'] } }] }] }, 'is not inside'],
    ['a bad cidr', { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }] }] }, 'is not a CIDR'],
    ['port 0', { ingress: [{ ports: [{ port: 0 }] }] }, 'is not a port number'],
    ['a bad port name', { ingress: [{ ports: [{ port: 'HTTP' }] }] }, 'is not a port name'],
    ['a port name of digits only', { ingress: [{ ports: [{ port: '8080' }] }] }, 'is not a port name'],
    ['endPort with a named port', { ingress: [{ ports: [{ port: 'http', endPort: 90 }] }] }, 'endPort needs a numeric port'],
    ['endPort below port', { ingress: [{ ports: [{ port: 90, endPort: 80 }] }] }, 'endPort is below port'],
    ['an unknown protocol', { egress: [{ ports: [{ protocol: 'ICMP' }] }] }, 'is not TCP, UDP or SCTP'],
    ['too many rules', { ingress: Array.from({ length: NETPOL_BOUNDS.rules + 1 }, () => ({})) }, `more than ${NETPOL_BOUNDS.rules}`],
  ])('keeps a policy with %s as refused: isolating, allowing nothing', (_w, spec, reason) => {
    const p = projectNetworkPolicy({ metadata: meta, spec });
    expect(p.ok).toBe(true);
    if (!p.ok) return;
    expect(p.value.refused).toContain(reason);
    expect(p.value.spec.ingress).toBeUndefined();
    expect(p.value.spec.egress).toBeUndefined();
    expect(p.value.spec.policyTypes).toEqual('egress' in spec ? ['Ingress', 'Egress'] : ['Ingress']);
  });

  it('a refused policy keeps its own policyTypes', () => {
    const p = projectNetworkPolicy({ metadata: meta, spec: { policyTypes: ['Egress'], egress: [{ ports: [{ port: -1 }] }] } });
    expect(p.ok && p.value.spec.policyTypes).toEqual(['Egress']);
  });
});
