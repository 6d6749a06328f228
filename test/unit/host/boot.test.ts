// The boot record keeps the HNS network the agent runs (src/host/boot.ts), and `flanneld cni-config` names
// it: net-conf.json without Backend.Name (the cluster's shared kube-flannel-cfg) and an adopted `vxlan0`
// give `"name": "vxlan0"`, not net-conf's default `flannel.4096` (with which every pod ADD fails in the real
// win-overlay: `Network name "flannel.4096" not found`).
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootRecordPath, checkBoot, readBootNetwork, recordBootNetwork } from '../../../src/host/boot.js';
import { agentNetworkName } from '../../../src/cni/conflist.js';
import { command } from '../../../src/commands/cni-config.js';
import { parseNetConf } from '../../../src/subnet/net-conf.js';

const VXLAN = parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
const HOSTGW = parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}');

function withDir(fn: (dir: string) => Promise<void> | void): () => Promise<void> {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), 'boot-net-'));
    try {
      await fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

describe('the boot record keeps the network the agent runs', () => {
  it(
    'recordBootNetwork keeps the boot time, and checkBoot keeps the network over a restart',
    withDir((dir) => {
      const subnetFile = join(dir, 'subnet.env');
      const path = bootRecordPath(subnetFile);
      expect(readBootNetwork(subnetFile)).toBeUndefined();
      checkBoot(path, 1_000_000, 2_000_000);
      recordBootNetwork(path, { name: 'vxlan0', id: 'ABC', backend: 'vxlan' });
      expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ bootTimeMs: 1_000_000, starts: 1, network: { name: 'vxlan0', id: 'ABC', backend: 'vxlan' } });
      const again = checkBoot(path, 1_000_000, 3_000_000);
      expect(again.kind).toBe('restart');
      expect(readBootNetwork(subnetFile)).toEqual({ name: 'vxlan0', id: 'ABC', backend: 'vxlan' });
    }),
  );

  it(
    'a host without a boot time still records the network; a broken record reads as none',
    withDir((dir) => {
      const subnetFile = join(dir, 'subnet.env');
      recordBootNetwork(bootRecordPath(subnetFile), { name: 'cbr0', id: 'X', backend: 'host-gw' });
      expect(readBootNetwork(subnetFile)).toEqual({ name: 'cbr0', id: 'X', backend: 'host-gw' });
      writeFileSync(bootRecordPath(subnetFile), '{"network":');
      expect(readBootNetwork(subnetFile)).toBeUndefined();
    }),
  );

  it.each<[string, { name: string; id: string; backend?: string } | undefined, typeof VXLAN, string]>([
    ['no record: net-conf (default name)', undefined, VXLAN, 'flannel.4096'],
    ['an adopted vxlan0', { name: 'vxlan0', id: 'A', backend: 'vxlan' }, VXLAN, 'vxlan0'],
    ['a record of the other backend is ignored', { name: 'vxlan0', id: 'A', backend: 'vxlan' }, HOSTGW, 'cbr0'],
  ])('agentNetworkName: %s', (_what, recorded, netConf, name) => {
    expect(agentNetworkName(netConf, '/run/flannel/subnet.env', () => recorded)).toBe(name);
  });

  it(
    'cni-config without Backend.Name names the adopted vxlan0 from the boot record',
    withDir(async (dir) => {
      const subnetFile = join(dir, 'subnet.env');
      writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
      const run = async () => {
        let stdout = '';
        const code = await command.run([`--net-config-path=${join(dir, 'net-conf.json')}`, `--subnet-file=${subnetFile}`, '--management-ip=10.0.0.2'], {
          stdout: (t) => (stdout += t),
          stderr: () => undefined,
          env: {},
          platform: 'linux',
        });
        expect(code).toBe(0);
        return (JSON.parse(stdout) as { name: string }).name;
      };
      expect(await run()).toBe('flannel.4096');
      recordBootNetwork(bootRecordPath(subnetFile), { name: 'vxlan0', id: 'A', backend: 'vxlan' });
      expect(await run()).toBe('vxlan0');
    }),
  );
});
