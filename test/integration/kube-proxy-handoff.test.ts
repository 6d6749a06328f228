// The kube-proxy hand-off: what a running agent leaves on the node is what the kube-proxy start scripts
// people use read, by those scripts' own field access (quoted below with the file and commit):
//
//  * microsoft/SDN Kubernetes/flannel/start-kubeproxy.ps1 (commit 14c3dd038167c34f62121499a2aebc637b040b58):
//      $sourceVipJSON = Get-Content c:\k\sourceVip.json | ConvertFrom-Json
//      $sourceVip = $sourceVipJSON.ip4.ip.Split("/")[0]
//      kube-proxy.exe ... --network-name=$networkName --source-vip=$sourceVip --enable-dsr=false
//  * kubernetes-sigs/sig-windows-tools hostprocess/flannel/kube-proxy/start.ps1 (commit 851343a18500caa0489774a564bef7d061592532):
//      $sourceVipJson = [io.Path]::Combine("c:/", "sourcevip", "sourceVip.json")
//      if (Test-Path $sourceVipJson) { $vip = (Get-Content $sourceVipJson | ConvertFrom-Json).ip4.ip.Split("/")[0] }
//    with KUBE_NETWORK "flannel.4096" from hostprocess/flannel/kube-proxy/kube-proxy.yml (commit 98215f415740bdfd0297b063d254c98fb9321991);
//    kube-proxy winkernel selects the HNS network by that name.
//  * the same start.ps1 from c3cac35ba0617fcd6680079e3eafdb2aa1233133 (2023-05-15) to its last version
//    e35b2e1622f3039a70956d4173faaceb067bc613 (2023-08-24; removed in 729ae7cd, 2025-04-11): host-local
//    run with "cniVersion": "0.3.0", read back as
//      $vip = $sourceVipJSONData.ips[0].address.Split("/")[0]
//
// Both are evaluated here with a small interpreter of PowerShell member chains (case-insensitive
// properties, as ConvertFrom-Json's objects have them; .Split(sep); [index]).
import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, waitFor } from '../support/cluster.js';
import { logSink } from '../support/log-sink.js';
import { PROFILES } from '../support/hns-profiles.js';

/** Evaluate `$x.a.b.Split("/")[0]` on a ConvertFrom-Json object. */
function psMemberChain(doc: unknown, expr: string): unknown {
  const m = /^\$\w+/.exec(expr);
  if (!m) throw new Error(`not a variable expression: ${expr}`);
  let rest = expr.slice(m[0].length);
  let v: unknown = doc;
  while (rest !== '') {
    let t: RegExpExecArray | null;
    if ((t = /^\.Split\("([^"]*)"\)/i.exec(rest))) {
      if (typeof v !== 'string') throw new Error(`.Split on ${JSON.stringify(v)} (PowerShell: "You cannot call a method on a null-valued expression")`);
      v = v.split(t[1]);
    } else if ((t = /^\.(\w+)/.exec(rest))) {
      const name = t[1].toLowerCase();
      const obj = v as Record<string, unknown> | null;
      const key = obj && typeof obj === 'object' ? Object.keys(obj).find((k) => k.toLowerCase() === name) : undefined;
      v = key === undefined ? null : obj![key];
    } else if ((t = /^\[(\d+)\]/.exec(rest))) {
      v = Array.isArray(v) ? v[Number(t[1])] : null;
    } else {
      throw new Error(`cannot evaluate ${rest}`);
    }
    rest = rest.slice(t[0].length);
  }
  return v;
}

const SCRIPTS = [
  { script: 'microsoft/SDN Kubernetes/flannel/start-kubeproxy.ps1', file: 'k/sourceVip.json', expr: '$sourceVipJSON.ip4.ip.Split("/")[0]' },
  { script: 'sig-windows-tools hostprocess/flannel/kube-proxy/start.ps1', file: 'sourcevip/sourceVip.json', expr: '$sourceVipJSONData.ip4.ip.Split("/")[0]' },
  {
    script: 'sig-windows-tools hostprocess/flannel/kube-proxy/start.ps1 (since 2023-05)',
    file: 'sourcevip/sourceVip.json',
    expr: '$sourceVipJSONData.ips[0].address.Split("/")[0]',
  },
];

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

describe('kube-proxy hand-off', () => {
  it('the interpreter is not vacuous: a CNI >= 0.3 host-local result has no ip4 and fails the way PowerShell would', () => {
    expect(psMemberChain({ IP4: { IP: '10.244.1.2/24' } }, '$x.ip4.ip.Split("/")[0]')).toBe('10.244.1.2');
    expect(() => psMemberChain({ cniVersion: '0.3.1', ips: [{ address: '10.244.1.2/24' }] }, '$x.ip4.ip.Split("/")[0]')).toThrow(/null-valued/);
    expect(psMemberChain({ ips: [{ address: '10.244.1.2/24' }] }, '$x.ips[0].address.Split("/")[0]')).toBe('10.244.1.2');
  });

  // On each HNS profile (../support/hns-profiles.ts): the source VIP is an HCN v2 endpoint (hcsshim
  // hcn/hcnglobals.go V2ApiVersion, 9.2) on the Overlay network (RemoteSubnetVersion, 9.2), which every profile has.
  it.each(PROFILES)(
    'vxlan on $os (HNS $hns): both scripts read the reserved source VIP from our files, and --network-name / KUBE_NETWORK flannel.4096 is our HNS network',
    async ({ version: hnsVersion }) => {
      cluster = await new TestCluster().start();
      cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan' }));
      cluster.addWindowsNode('win-1', '10.244.7.0/24', '10.0.0.20');
      const root = join(cluster.dir, 'c');
      const a = cluster.startAgent({
        nodeName: 'win-1',
        ip: '10.0.0.20',
        netConf: VXLAN_NET_CONF,
        hnsVersion,
        extraArgs: [
          `--source-vip-file=${join(root, 'run', 'flannel', 'sourcevip.json')}`,
          `--source-vip-compat-files=${[...new Set(SCRIPTS.map((s) => join(root, s.file)))].join(',')}`,
          `--cni-ipam-data-dir=${join(root, 'var', 'lib', 'cni', 'networks')}`,
        ],
      });
      await waitFor(() => a.agent.isReady && a.agent.sourceVip, 'agent ready with a source VIP');
      const vip = a.agent.sourceVip!;
      expect(vip.ip).toBe('10.244.7.2');

      for (const s of SCRIPTS) {
        const text = readFileSync(join(root, s.file), 'utf8');
        expect([s.script, /^[\x20-\x7e\r\n\t]*$/.test(text)]).toEqual([s.script, true]); // ASCII, no BOM: Windows PowerShell 5.1's Get-Content reads it as is
        expect([s.script, psMemberChain(JSON.parse(text), s.expr)]).toEqual([s.script, vip.ip]);
      }

      // kube-proxy winkernel finds the network by name and the source VIP endpoint on it.
      const sim = a.sim;
      const network = sim.getNetworkByName('flannel.4096');
      expect(network?.Type).toBe('Overlay');
      const ep = sim.listEndpoints().find((e) => e.Name === 'flannel.4096_sourcevip');
      expect(JSON.stringify(ep)).toContain(vip.ip);
      // host-local would never hand the address to a pod: it is reserved in the store the CNI reads.
      expect(readFileSync(join(root, 'var', 'lib', 'cni', 'networks', 'flannel.4096', vip.ip), 'utf8')).toMatch(/^flanneld-source-vip/);
    },
  );

  // kube-proxy's scripts read these files at every kube-proxy start; one deleted (C:\k cleaned by hand, a
  // reinstalled kube-proxy) would make the script reserve a new address with host-local, which is not the
  // endpoint kube-proxy then looks up. The agent owns them: its HNS check (every resync) writes a missing
  // or changed one again and says so at warn.
  it('vxlan: a deleted or edited sourceVip.json is written again at the next HNS check, and logged', async () => {
    cluster = await new TestCluster().start();
    cluster.addWindowsNode('win-1', '10.244.7.0/24', '10.0.0.20');
    const root = join(cluster.dir, 'c');
    const compat = [join(root, 'k', 'sourceVip.json'), join(root, 'sourcevip', 'sourceVip.json')];
    const sink = logSink();
    const a = cluster.startAgent({
      nodeName: 'win-1',
      ip: '10.0.0.20',
      netConf: VXLAN_NET_CONF,
      log: sink.log,
      extraArgs: [`--source-vip-file=${join(root, 'run', 'flannel', 'sourcevip.json')}`, `--source-vip-compat-files=${compat.join(',')}`],
    });
    await waitFor(() => a.agent.isReady && a.agent.sourceVip, 'agent ready with a source VIP');
    const written = compat.map((f) => readFileSync(f, 'utf8'));
    rmSync(compat[0]);
    writeFileSync(compat[1], '{"cniVersion":"0.2.0","ip4":{"ip":"10.244.7.99/24"}}\n');
    await waitFor(() => existsSync(compat[0]) && readFileSync(compat[1], 'utf8') === written[1], 'both source VIP files written again');
    expect(compat.map((f) => readFileSync(f, 'utf8'))).toEqual(written);
    const warned = sink.entries.filter((e) => e['level'] === 'warn' && e['message'] === 'a source VIP file kube-proxy reads was missing or changed; wrote it again');
    expect(warned.map((e) => e['path']).sort()).toEqual([...compat].sort());
    // The endpoint was never lost: no rebuild, the same address.
    expect(a.agent.sourceVip!.ip).toBe('10.244.7.2');
  });

  it('host-gw: --network-name cbr0 is our L2Bridge network (no source VIP)', async () => {
    cluster = await new TestCluster().start();
    cluster.addWindowsNode('win-1', '10.244.8.0/24', '10.0.0.21');
    const a = cluster.startAgent({ nodeName: 'win-1', ip: '10.0.0.21', netConf: HOSTGW_NET_CONF });
    await waitFor(() => a.agent.isReady, 'agent ready');
    expect(a.sim.getNetworkByName('cbr0')?.Type).toBe('L2Bridge');
    expect(a.agent.sourceVip).toBeUndefined();
  });
});
