// MAC addresses in the two spellings this agent meets: flannel's VtepMAC (`00:15:5d:b3:ac:db`, Go's
// net.HardwareAddr.String(), flannel pkg/backend/vxlan) and HNS's (`00-15-5D-B3-AC-DB`, hcsshim hcn
// `DistributedRouterMacAddress`). A basic facility beside ./ip4.ts: the vxlan backend and peer lease
// validation (kube and etcd alike) use it. Pure.

/** HNS prints MACs as `00-15-5D-B3-AC-DB`; flannel publishes `00:15:5d:b3:ac:db`. */
export function macToFlannel(mac: string): string {
  return mac.replace(/-/g, ':').toLowerCase();
}

/** `aa:bb:cc:dd:ee:ff`, unicast (I/G bit clear), not all zero, not broadcast. */
export function isValidVtepMac(mac: unknown): boolean {
  if (typeof mac !== 'string' || !/^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/.test(mac)) return false;
  const octets = mac.split(':').map((h) => parseInt(h, 16));
  if (octets.every((o) => o === 0)) return false;
  // The low bit of the first octet marks group (multicast) addresses; broadcast ff:..:ff is one of them.
  return (octets[0] & 1) === 0;
}
