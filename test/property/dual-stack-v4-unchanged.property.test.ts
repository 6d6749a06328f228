// Property: an IPv4-only cluster sees no change from dual-stack support. Whatever IPv6 a Node carries
// (IPv6 podCIDRs, public-ipv6, backend-v6-data, the overrides), an agent without EnableIPv6 projects,
// validates, routes and writes subnet.env exactly as it does for the same Node without any of it.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { annotationKeys } from '../../src/subnet/kube/annotations.js';
import { projectNode, toLease } from '../../src/subnet/kube/node-list-watch.js';
import { leaseContent } from '../../src/peers/store.js';
import { validateLease, type LeaseValidationContext } from '../../src/peers/validate.js';
import { hostGwRouteDriver } from '../../src/backends/hostgw/routes.js';
import { encodeSubnetEnv } from '../../src/subnet/subnet-env.js';
import type { Route, RouteTable } from '../../src/routes/route-table.js';

const P = 'flannel.alpha.coreos.com/';
const KEYS = annotationKeys(P);
const V6_KEYS = ['backend-v6-data', 'public-ipv6', 'public-ipv6-overwrite', 'node-public-ipv6'].map((k) => P + k);

const octet = fc.integer({ min: 0, max: 255 });
const v4 = fc.tuple(octet, octet).map(([a, b]) => `10.42.${a}.${b % 2 === 0 ? 0 : b}/24`);
const hex = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
const v6addr = fc.oneof(
  fc.tuple(hex, hex).map(([a, b]) => `2001:cafe:42:${a}::${b}`),
  fc.constantFrom('fe80::1', '::1', 'ff02::1', 'not-an-ip', '', 'FD00::1'),
);
const v6cidr = fc.oneof(
  hex.map((a) => `2001:cafe:42:${a}::/64`),
  fc.constantFrom('fd00::/48', 'fd00::1/64', '2001:db8::/129', 'banana'),
);

/** A Node as a dual-stack (or half-configured) Linux flanneld leaves it, plus junk in the v6 keys. */
const node = fc
  .record({
    v4: v4,
    v6: fc.option(v6cidr, { nil: undefined }),
    v6First: fc.boolean(),
    publicIP: fc.constantFrom('192.168.10.11', '192.168.10.12', '10.42.9.9', ''),
    v6ann: fc.dictionary(fc.constantFrom(...V6_KEYS), v6addr, { maxKeys: 4 }),
    backendType: fc.constantFrom('host-gw', 'vxlan'),
  })
  .map((r) => ({
    withV6: {
      metadata: {
        name: 'peer',
        annotations: {
          [`${P}kube-subnet-manager`]: 'true',
          [`${P}backend-type`]: r.backendType,
          [`${P}backend-data`]: 'null',
          [`${P}public-ip`]: r.publicIP,
          ...r.v6ann,
        },
      },
      spec: { podCIDR: r.v4, podCIDRs: r.v6 === undefined ? [r.v4] : r.v6First ? [r.v6, r.v4] : [r.v4, r.v6] },
    },
    withoutV6: {
      metadata: {
        name: 'peer',
        annotations: { [`${P}kube-subnet-manager`]: 'true', [`${P}backend-type`]: r.backendType, [`${P}backend-data`]: 'null', [`${P}public-ip`]: r.publicIP },
      },
      spec: { podCIDR: r.v4, podCIDRs: r.v6 === undefined || !r.v6First ? [r.v4] : [r.v6, r.v4] },
    },
  }));

const ctx: LeaseValidationContext = { network: '10.42.0.0/16', subnetLen: 24, ownSubnet: '10.42.0.0/24', backendType: 'host-gw', nodeNetwork: '192.168.10.10/24' };

class Routes implements RouteTable {
  calls: unknown[][] = [];
  list(...args: unknown[]): Promise<Route[]> {
    this.calls.push(args);
    return Promise.resolve([]);
  }
  add(): Promise<void> {
    return Promise.resolve();
  }
  remove(): Promise<void> {
    return Promise.resolve();
  }
}

describe('an IPv4-only agent and dual-stack Nodes', () => {
  it('projects, validates and routes a Node with IPv6 exactly as the same Node without it', async () => {
    await fc.assert(
      fc.asyncProperty(node, async ({ withV6, withoutV6 }) => {
        const a = projectNode(withV6, KEYS);
        const b = projectNode(withoutV6, KEYS);
        expect(a).toEqual(b);
        const la = toLease(a!);
        const lb = toLease(b!);
        expect(la).toEqual(lb);
        if (la === undefined || lb === undefined) return;
        expect(la).not.toHaveProperty('ipv6Subnet');
        expect(leaseContent(la)).toBe(JSON.stringify([la.subnet, la.publicIP, la.backendType, la.backendData ?? null]));
        expect(validateLease(la, ctx)).toEqual(validateLease(lb, ctx));
        const routes = new Routes();
        const driver = hostGwRouteDriver({ routes, network: '10.42.0.0/16', ownSubnet: '10.42.0.0/24', vnic: { index: 7, refresh: () => Promise.resolve(false) } });
        // Even a lease that somehow carried an IPv6 half gets the one IPv4 route.
        expect(driver.desiredFor({ ...la, ipv6Subnet: '2001:cafe:42:1::/64', publicIPv6: '2001:db8::1' })).toEqual([
          { destinationPrefix: la.subnet, nextHop: la.publicIP, interfaceIndex: 7, metric: 256 },
        ]);
        await driver.readActual();
        expect(routes.calls).toEqual([[7]]);
      }),
      { numRuns: 300 },
    );
  });

  it('subnet.env without IPv6 has no IPv6 line and the upstream four-line layout', () => {
    fc.assert(
      fc.property(octet, fc.integer({ min: 576, max: 9000 }), fc.boolean(), (o, mtu, masq) => {
        const text = encodeSubnetEnv({ network: '10.42.0.0/16', subnet: `10.42.${o}.0/24`, mtu, ipMasq: masq });
        expect(text).toBe(`FLANNEL_NETWORK=10.42.0.0/16\nFLANNEL_SUBNET=10.42.${o}.1/24\nFLANNEL_MTU=${mtu}\nFLANNEL_IPMASQ=${masq}\n`);
      }),
    );
  });
});
