// `flanneld netconf set-vni` (src/subnet/net-conf-edit.ts): only Backend.VNI and Backend.Port change; every
// other key keeps its bytes, its order and its spelling. The configs carry every key of flannel's
// pkg/subnet/config.go Config (EnableIPv4, EnableIPv6, Network, IPv6Network, SubnetLen, SubnetMin,
// SubnetMax, IPv6SubnetLen, IPv6SubnetMin, IPv6SubnetMax, EnableNFTables, Backend) and the vxlan backend's
// (Documentation/backends.md: Type, VNI, Port, GBP, Learning, DirectRouting, MTU, MacPrefix), plus a key
// nobody knows, since a future flannel may add one.
import { describe, expect, it } from '@jest/globals';
import yaml from 'js-yaml';
import { NetConfError } from '../../../src/basics/errors.js';
import { lineDiff, setVni, setVniInNetConf } from '../../../src/subnet/net-conf-edit.js';
import { parseNetConf } from '../../../src/subnet/net-conf.js';
import { expectCode } from '../../support/errors.js';

const EVERY_KEY = `{
  "EnableIPv4": true,
  "EnableIPv6": true,
  "Network": "10.244.0.0/16",
  "IPv6Network": "2001:cafe:42::/56",
  "SubnetLen": 24,
  "SubnetMin": "10.244.1.0",
  "SubnetMax": "10.244.250.0",
  "IPv6SubnetLen": 64,
  "IPv6SubnetMin": "2001:cafe:42:1::",
  "IPv6SubnetMax": "2001:cafe:42:ff::",
  "EnableNFTables": true,
  "FutureKey": {"nested": [1, 2, {"x": null}]},
  "Backend": {
    "Type": "vxlan",
    "VNI": 1,
    "Port": 8472,
    "GBP": false,
    "Learning": false,
    "DirectRouting": true,
    "MTU": 1400,
    "MacPrefix": "0E-2A"
  }
}
`;

const EDIT = { vni: 4096, port: 4789 };

/** The lines a diff adds or removes. */
function changedLines(a: string, b: string): string[] {
  return lineDiff(a, b, ['a', 'b'])
    .split('\n')
    .slice(2)
    .filter((l) => l.startsWith('+') || l.startsWith('-'));
}

/** Parsed `after` equals parsed `before` with Backend.VNI/Port set (keys compared as spelled). */
function expectOnlyVniPort(before: string, after: string, backendKey = 'Backend', vniKey = 'VNI', portKey = 'Port'): void {
  const a = JSON.parse(before) as Record<string, Record<string, unknown>>;
  const b = JSON.parse(after) as Record<string, Record<string, unknown>>;
  expect(Object.keys(b)).toEqual(Object.keys(a)); // key order kept
  expect(b).toEqual({ ...a, [backendKey]: { ...a[backendKey], [vniKey]: 4096, [portKey]: 4789 } });
}

describe('setVniInNetConf', () => {
  it.each<[string, string, string[]]>([
    ['every upstream key, VNI 1 / Port 8472 given', EVERY_KEY, ['-    "VNI": 1,', '-    "Port": 8472,', '+    "VNI": 4096,', '+    "Port": 4789,']],
    [
      "upstream's kube-flannel.yml: no VNI or Port",
      '{\n  "Network": "10.244.0.0/16",\n  "EnableNFTables": false,\n  "Backend": {\n    "Type": "vxlan"\n  }\n}\n',
      ['-    "Type": "vxlan"', '+    "Type": "vxlan",', '+    "VNI": 4096,', '+    "Port": 4789'],
    ],
    [
      'compact, one line',
      '{"Network":"10.244.0.0/16","EnableIPv6":true,"IPv6Network":"fd00::/56","Backend":{"Type":"vxlan"}}',
      [
        '-{"Network":"10.244.0.0/16","EnableIPv6":true,"IPv6Network":"fd00::/56","Backend":{"Type":"vxlan"}}',
        '+{"Network":"10.244.0.0/16","EnableIPv6":true,"IPv6Network":"fd00::/56","Backend":{"Type":"vxlan","VNI": 4096,"Port": 4789}}',
      ],
    ],
    [
      'tabs and CRLF',
      '{\r\n\t"Network": "10.244.0.0/16",\r\n\t"Backend": {\r\n\t\t"Type": "vxlan"\r\n\t}\r\n}\r\n',
      ['-\t\t"Type": "vxlan"', '+\t\t"Type": "vxlan",', '+\t\t"VNI": 4096,', '+\t\t"Port": 4789'],
    ],
  ])('%s: only the VNI and Port lines change', (_what, text, changed) => {
    const r = setVniInNetConf(text, EDIT);
    expectOnlyVniPort(text, r.text);
    expect(changedLines(text, r.text)).toEqual(changed);
    if (text.includes('\r\n')) expect(r.text.replace(/\r\n/g, '')).not.toContain('\n'); // no bare LF added
  });

  it('keeps the spelling Go matched case-insensitively ("backend", "vni", "port")', () => {
    const text = '{"Network": "10.244.0.0/16", "backend": {"type": "VXLAN", "vni": 1, "port": 8472}}';
    const r = setVniInNetConf(text, EDIT);
    expect(r.text).toBe('{"Network": "10.244.0.0/16", "backend": {"type": "VXLAN", "vni": 4096, "port": 4789}}');
    expect(r.before).toEqual({ vni: 1, port: 8472 });
    expectOnlyVniPort(text, r.text, 'backend', 'vni', 'port');
  });

  it.each([
    ['host-gw', '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}'],
    ['no Backend', '{"Network":"10.244.0.0/16"}'],
    ['Backend not an object', '{"Network":"10.244.0.0/16","Backend":"vxlan"}'],
    ['not JSON', '{"Network": '],
    ['an array', '[1]'],
  ])('refuses %s with FLANNEL_ERR_NET_CONF', (_what, text) => {
    expectCode(() => setVniInNetConf(text, EDIT), NetConfError, 'FLANNEL_ERR_NET_CONF');
  });
});

// kubectl get cm kube-flannel-cfg -o json (kubectl's own layout: 4-space indent, net-conf.json one string).
const CM_JSON = JSON.stringify(
  {
    apiVersion: 'v1',
    data: { 'cni-conf.json': '{\n  "name": "cbr0",\n  "cniVersion": "0.3.1"\n}\n', 'net-conf.json': EVERY_KEY },
    kind: 'ConfigMap',
    metadata: {
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"apiVersion":"v1"}\n' },
      name: 'kube-flannel-cfg',
      namespace: 'kube-flannel',
      resourceVersion: '812',
      uid: 'b0e1',
    },
  },
  null,
  4,
);

// kubectl get cm kube-flannel-cfg -o yaml: literal blocks for the multi-line values.
const CM_YAML = `apiVersion: v1
data:
  cni-conf.json: |
    {
      "name": "cbr0",
      "cniVersion": "0.3.1"
    }
  net-conf.json: |
${EVERY_KEY.replace(/\n$/, '')
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
kind: ConfigMap
metadata:
  labels:
    app: flannel
  name: kube-flannel-cfg
  namespace: kube-flannel
`;

describe('setVni with a UTF-8 BOM (PowerShell 5 `Set-Content -Encoding utf8` writes one; src/basics/bom.ts)', () => {
  it.each<[string, string, string]>([
    ['net-conf.json', EVERY_KEY, 'net-conf.json'],
    ['ConfigMap (JSON)', CM_JSON, 'ConfigMap (JSON)'],
  ])('%s: edited as without it, and the BOM kept', (_what, text, source) => {
    const plain = setVni(text, EDIT);
    const r = setVni(`\uFEFF${text}`, EDIT);
    expect(r.source).toBe(source);
    expect(r.text).toBe(`\uFEFF${plain.text}`);
    expect(r.before).toEqual({ vni: 1, port: 8472 });
  });
});

describe('setVni on the ConfigMap', () => {
  it('JSON (kubectl get -o json): only the net-conf.json string changes, with only VNI and Port inside', () => {
    const r = setVni(CM_JSON, EDIT);
    expect(r.source).toBe('ConfigMap (JSON)');
    const a = JSON.parse(CM_JSON) as { data: Record<string, string> };
    const b = JSON.parse(r.text) as { data: Record<string, string> };
    expect({ ...b, data: { ...b.data, 'net-conf.json': '' } }).toEqual({ ...a, data: { ...a.data, 'net-conf.json': '' } });
    expectOnlyVniPort(a.data['net-conf.json'], b.data['net-conf.json']);
    expect(changedLines(CM_JSON, r.text)).toHaveLength(2); // the one line holding the string
    expect(r.before).toEqual({ vni: 1, port: 8472 });
  });

  it('YAML (kubectl get -o yaml): only the VNI and Port lines of the block change', () => {
    const r = setVni(CM_YAML, EDIT);
    expect(r.source).toBe('ConfigMap (YAML)');
    expect(changedLines(CM_YAML, r.text)).toEqual(['-        "VNI": 1,', '-        "Port": 8472,', '+        "VNI": 4096,', '+        "Port": 4789,']);
    const doc = yaml.load(r.text) as { data: Record<string, string> };
    expectOnlyVniPort(EVERY_KEY, doc.data['net-conf.json']);
  });

  it("YAML with the upstream manifest's net-conf (no VNI): the keys are inserted at the block's indentation", () => {
    const text =
      'kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: kube-flannel-cfg\ndata:\n  net-conf.json: |\n    {\n      "Network": "10.244.0.0/16",\n      "Backend": {\n        "Type": "vxlan"\n      }\n    }\n';
    const r = setVni(text, EDIT);
    expect(r.text).toBe(text.replace('"Type": "vxlan"\n', '"Type": "vxlan",\n        "VNI": 4096,\n        "Port": 4789\n'));
  });

  it('YAML with net-conf.json as a one-line quoted string', () => {
    const text =
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube-flannel-cfg\ndata:\n  net-conf.json: \'{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan"}}\'\n  other: x\n';
    const r = setVni(text, EDIT);
    const doc = yaml.load(r.text) as { data: Record<string, string> };
    expect(doc.data['net-conf.json']).toBe('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI": 4096,"Port": 4789}}');
    expect(r.text.split('\n').filter((l) => !l.includes('net-conf.json'))).toEqual(text.split('\n').filter((l) => !l.includes('net-conf.json')));
  });

  it('microsoft/SDN\'s kube-flannel-vxlan.yaml (commit 343ca0f6): already VNI 4096 / Port 4789 (written "VNI" : 4096) is left byte for byte', () => {
    const text =
      'kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: kube-flannel-cfg\n  namespace: kube-system\n  labels:\n    tier: node\n    app: flannel\ndata:\n' +
      '  net-conf.json: |\n    {\n      "Network": "192.168.0.0/16",\n      "Backend": {\n        "Type": "vxlan",\n        "VNI" : 4096,\n        "Port": 4789\n      }\n    }\n';
    const same = setVni(text, EDIT);
    expect(same.text).toBe(text);
    expect(same.before).toEqual({ vni: 4096, port: 4789 });
    const other = setVni(text, { vni: 4097, port: 4789 });
    expect(changedLines(text, other.text)).toEqual(['-        "VNI" : 4096,', '+        "VNI" : 4097,']);
  });

  it('a bare net-conf.json is a net-conf.json', () => {
    expect(setVni(EVERY_KEY, EDIT).source).toBe('net-conf.json');
  });

  it.each([
    ['a ConfigMap without net-conf.json', 'kind: ConfigMap\napiVersion: v1\ndata:\n  cni-conf.json: "{}"\n'],
    ['a folded net-conf.json block', 'kind: ConfigMap\ndata:\n  net-conf.json: >\n    {"Network": "10.244.0.0/16",\n    "Backend": {"Type": "vxlan"}}\n'],
    ['neither JSON nor YAML', 'kind: [\n'],
  ])('refuses %s with FLANNEL_ERR_NET_CONF', (_what, text) => {
    expectCode(() => setVni(text, EDIT), NetConfError, 'FLANNEL_ERR_NET_CONF');
  });
});

// Go's encoding/json decodes every key that matches a field without regard to case, in order, so the
// last one stays (Linux flanneld's net-conf); the agent's reader (src/subnet/net-conf.ts) takes the last
// one too. set-vni edits and checks that one, whatever the other spellings say.
describe('set-vni with Backend and backend both present', () => {
  it.each([
    ['Backend then backend', '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":1},"backend":{"Type":"vxlan","VNI":1,"Port":8472}}'],
    ['backend then Backend', '{"Network":"10.244.0.0/16","backend":{"Type":"vxlan","VNI":1,"Port":8472},"Backend":{"Type":"vxlan","VNI":7}}'],
    ['vni and VNI in the last backend', '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan"},"backend":{"Type":"vxlan","VNI":1,"vni":2}}'],
  ])('%s: the key the agent reads gets VNI 4096 / Port 4789', (_name, text) => {
    const r = setVniInNetConf(text, { vni: 4096, port: 4789 });
    const read = parseNetConf(r.text);
    expect(read.backend).toMatchObject({ type: 'vxlan', vni: 4096, port: 4789 });
    expect(setVni(text, { vni: 4096, port: 4789 }).netConf).toBe(r.text);
  });
});
