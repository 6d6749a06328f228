// HNS endpoint ACL rules as the simulated node reads them: the language of an `ACL` endpoint policy
// (hcsshim hcn/hcnpolicy.go AclPolicySetting) and of a `SetPolicy` IP set (SetPolicySetting); the sources
// are docs/simulator.md, "ACL rules and IP sets". Pure; ./refusals.ts uses the parsers to judge what
// HcnModifyEndpoint and HcnModifyNetwork get.
import { parseCidr, parseIp4 } from '../basics/ip4.js';
import { parseCidr6, parseIp6 } from '../basics/ip6.js';
import { ACL_POLICY, SET_POLICY } from '../hns/schema.js';
import type { AclPolicySetting, HcnPolicy, SetPolicySetting } from '../hns/schema.js';

/** Protocol "any" as HNS takes it (Azure NPM policy_windows.go: "HNS thinks 256 as ANY protocol"; Calico policysets.go protocolNameToNumber). */
export const ANY_PROTOCOL = 256;

/** The items of a comma-separated field; absent or empty: none. */
export function listItems(text: string | undefined): string[] {
  return text === undefined || text === '' ? [] : text.split(',');
}

/** An ACL's `Protocols`: one decimal number 0..256 (absent or empty: any); undefined when malformed. */
export function parseProtocol(text: unknown): number | undefined {
  if (text === undefined || text === '') return ANY_PROTOCOL;
  if (typeof text !== 'string' || !/^(0|[1-9]\d{0,2})$/.test(text)) return undefined;
  const n = Number(text);
  return n <= ANY_PROTOCOL ? n : undefined;
}

/** A port list: `80`, `80,8080` (hcsshim hcnutils_test.go), `8000-8100` (Calico protoPortToHCSPort); ports 1..65535. Undefined when malformed. */
export function parsePorts(text: string): [number, number][] | undefined {
  const out: [number, number][] = [];
  for (const item of listItems(text)) {
    const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(item);
    if (!m) return undefined;
    const first = Number(m[1]);
    const last = m[2] === undefined ? first : Number(m[2]);
    if (first < 1 || last > 65535 || first > last) return undefined;
    out.push([first, last]);
  }
  return out;
}

/** An address or prefix of an ACL or an IPSET, either family. */
export type AddressRange = { family: 4; net: string } | { family: 6; net: string };

/** `10.0.0.21`, `192.168.100.0/24`, `fd00::1`, `fd00::/64` (hcsshim hcnutils_test.go HcnCreateAcls); undefined when it is none of them. */
export function parseAddress(item: string): AddressRange | undefined {
  if (parseCidr(item)) return { family: 4, net: item };
  if (parseIp4(item) !== undefined) return { family: 4, net: `${item}/32` };
  if (item.includes('%')) return undefined;
  if (parseCidr6(item)) return { family: 6, net: item };
  if (parseIp6(item) !== undefined) return { family: 6, net: `${item}/128` };
  return undefined;
}

/** The SetPolicy Ids an ACL's address fields name: every item that is no address (Azure NPM policy_windows.go getAddrListFromSetInfo writes set Ids there). */
export function setIdsOf(acl: Pick<AclPolicySetting, 'LocalAddresses' | 'RemoteAddresses'>): string[] {
  return [...listItems(acl.LocalAddresses), ...listItems(acl.RemoteAddresses)].filter((i) => parseAddress(i) === undefined);
}

/** The Settings of an ACL endpoint policy, or undefined for any other policy. */
export function aclOf(p: HcnPolicy | undefined): AclPolicySetting | undefined {
  return p?.Type === ACL_POLICY && typeof p.Settings === 'object' && p.Settings !== null ? (p.Settings as unknown as AclPolicySetting) : undefined;
}

/** The Settings of a SetPolicy network policy, or undefined for any other policy. */
export function setOf(p: HcnPolicy | undefined): SetPolicySetting | undefined {
  return p?.Type === SET_POLICY && typeof p.Settings === 'object' && p.Settings !== null ? (p.Settings as unknown as SetPolicySetting) : undefined;
}
