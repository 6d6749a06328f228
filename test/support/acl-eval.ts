// TEMPORARY: a tiny evaluator of HNS endpoint ACL rules, for the NetworkPolicy core's tests only, until the
// simulator's own (src/simulator/acl.ts, issue 35's other half) replaces it; then this file goes. Its rules
// are the ones that half models:
// - only Switch rules (VFP) decide; Host rules are the Windows Firewall layer, which the agent opens
//   (Calico felix/dataplane/windows/endpoint_mgr.go NewHostRule) and which is not modelled here;
// - per direction, rules in ascending Priority, the first that matches decides; none matching: allowed;
// - a connection is checked once, as it opens (Out on the source's endpoint, In on the destination's); its
//   replies pass (the rules are stateful);
// - two matching rules of one priority and different actions is an error here (HNS breaks such ties its
//   own way; Calico policysets.go), never a verdict;
// - addresses: a field that names IP sets (Azure NPM policy_windows.go) is matched as source
//   (LocalAddresses) and destination (RemoteAddresses); a field of literal addresses as the endpoint's own
//   (LocalAddresses) and the peer's (RemoteAddresses). Ports: LocalPorts the endpoint's, RemotePorts the
//   peer's.
import type { AclDirection, AclPolicySetting, SetPolicySetting } from '../../src/netpol/hns-acl.js';
import { netHas, parseNet } from '../../src/netpol/cidr.js';

export interface AclEndpoint {
  ips: readonly string[];
  rules: readonly AclPolicySetting[];
}

export interface Connection {
  src: string;
  dst: string;
  protocol: 'TCP' | 'UDP';
  port: number;
  srcPort?: number;
}

const NUMBER = { TCP: '6', UDP: '17' } as const;

export class AclEvaluator {
  private readonly byIp = new Map<string, AclEndpoint>();
  private readonly sets = new Map<string, string[]>();

  constructor(endpoints: readonly AclEndpoint[], sets: readonly SetPolicySetting[] = []) {
    for (const e of endpoints) for (const ip of e.ips) this.byIp.set(ip, e);
    for (const s of sets) this.sets.set(s.Id, s.Values === '' ? [] : s.Values.split(','));
  }

  /** Does the connection open: the source endpoint's Out rules and the destination endpoint's In rules (an address without an endpoint here is not filtered)? */
  allows(c: Connection): boolean {
    const srcPort = c.srcPort ?? 40000;
    const out = this.byIp.get(c.src);
    const inn = this.byIp.get(c.dst);
    const okOut =
      out === undefined || this.verdict(out, 'Out', { local: c.src, remote: c.dst, src: c.src, dst: c.dst, localPort: srcPort, remotePort: c.port, protocol: c.protocol });
    const okIn =
      inn === undefined || this.verdict(inn, 'In', { local: c.dst, remote: c.src, src: c.src, dst: c.dst, localPort: c.port, remotePort: srcPort, protocol: c.protocol });
    return okOut && okIn;
  }

  private verdict(ep: AclEndpoint, direction: AclDirection, p: Packet): boolean {
    const matching = ep.rules.filter((r) => (r.RuleType ?? 'Switch') === 'Switch' && r.Direction === direction && this.matches(r, p));
    if (matching.length === 0) return true;
    const first = Math.min(...matching.map((r) => r.Priority ?? 0));
    const actions = new Set(matching.filter((r) => (r.Priority ?? 0) === first).map((r) => r.Action));
    if (actions.size > 1) throw new Error(`rules of priority ${first} with different actions match one packet: ${JSON.stringify(matching)}`);
    return actions.has('Allow');
  }

  private matches(r: AclPolicySetting, p: Packet): boolean {
    if (r.Protocols !== undefined && r.Protocols !== '' && r.Protocols !== NUMBER[p.protocol]) return false;
    return (
      this.addressMatches(r.LocalAddresses, p.local, p.src) &&
      this.addressMatches(r.RemoteAddresses, p.remote, p.dst) &&
      portMatches(r.LocalPorts, p.localPort) &&
      portMatches(r.RemotePorts, p.remotePort)
    );
  }

  /** `literal` is what a list of addresses is matched against, `bySet` what a list of set Ids is. */
  private addressMatches(field: string | undefined, literal: string, bySet: string): boolean {
    if (field === undefined || field === '') return true;
    const tokens = field.split(',');
    const setTokens = tokens.filter((t) => this.sets.has(t));
    if (setTokens.length > 0 && setTokens.length < tokens.length) throw new Error(`a field mixes IP sets and addresses: ${field}`);
    if (setTokens.length === 0 && tokens.some((t) => t.startsWith('flannel-np-'))) throw new Error(`a rule names an IP set that does not exist: ${field}`);
    const [addresses, ip] = setTokens.length > 0 ? [setTokens.flatMap((t) => this.sets.get(t)!), bySet] : [tokens, literal];
    return addresses.some((a) => {
      const net = parseNet(a.includes('/') ? a : `${a}/${a.includes(':') ? 128 : 32}`);
      if (net === undefined) throw new Error(`not an address: ${a}`);
      return netHas(net, ip);
    });
  }
}

interface Packet {
  local: string;
  remote: string;
  src: string;
  dst: string;
  localPort: number;
  remotePort: number;
  protocol: 'TCP' | 'UDP';
}

function portMatches(field: string | undefined, port: number): boolean {
  if (field === undefined || field === '') return true;
  return field.split(',').some((t) => {
    const [a, b] = t.split('-').map(Number);
    return port >= a && port <= (b ?? a);
  });
}
