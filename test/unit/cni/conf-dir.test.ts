// `cni-config -o FILE` where containerd would load another CNI config first (src/cni/conf-dir.ts):
// the sig-windows-tools migration leaves C:\etc\cni\net.d\10-flannel.conf, which sorts before our
// 10-flannel.conflist, and containerd (go-cni loadFromConfDir: .conf/.conflist/.json, sort.Strings, the
// first one) would keep using it. A flannel config of an earlier Windows install is recognised by its
// content and moved aside (backed up beside itself) once ours is written; only a foreign config is refused.
// The earlier installs' configs below are their real templates:
//  * kubernetes-sigs/sig-windows-tools hostprocess/flannel/flanneld/flannel-overlay.yml (cni-conf-containerd.json),
//    filled by hostprocess/flannel/flanneld/start.ps1 and written to c:/etc/cni/net.d/10-flannel.conf;
//  * microsoft/SDN Kubernetes/flannel/overlay/cni/config/cni.conf and l2bridge/cni/config/cni.conf.
import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backupPath, checkCniConfOrder, configsBefore, earlierFlannelConfig } from '../../../src/cni/conf-dir.js';
import { command } from '../../../src/commands/cni-config.js';
import { CniInstallError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';

const DIR = '/etc/cni/net.d';
const FILE = `${DIR}/10-flannel.conflist`;

/** sig-windows-tools' 10-flannel.conf as its start.ps1 writes it (ConvertTo-Json of the filled template). */
const SIG_WINDOWS_TOOLS_CONF = `\ufeff{
    "name":  "flannel.4096",
    "cniVersion":  "0.2.0",
    "type":  "flannel",
    "capabilities":  { "portMappings":  true, "dns":  true },
    "delegate":  {
        "type":  "sdnoverlay",
        "AdditionalArgs":  [
            { "Name":  "EndpointPolicy", "Value":  { "Type":  "OutBoundNAT", "Settings":  { "Exceptions":  [ "10.96.0.0/12", "10.244.0.0/16" ] } } },
            { "Name":  "EndpointPolicy", "Value":  { "Type":  "SDNROUTE", "Settings":  { "DestinationPrefix":  "10.96.0.0/12", "NeedEncap":  true } } },
            { "Name":  "EndpointPolicy", "Value":  { "Type":  "ProviderAddress", "Settings":  { "ProviderAddress":  "10.1.0.5" } } }
        ]
    }
}`;
/** microsoft/SDN Kubernetes/flannel/overlay/cni/config/cni.conf. */
const SDN_OVERLAY_CONF = `{
    "cniVersion":  "0.2.0",
    "name":  "vxlan0",
    "type":  "flannel",
    "delegate":  {
        "type":  "win-overlay",
        "dns":  { "Nameservers":  [ "11.0.0.10" ], "Search":  [ "default.svc.cluster.local" ] },
        "Policies":  [
            { "Name":  "EndpointPolicy", "Value":  { "Type":  "OutBoundNAT", "ExceptionList":  [ "192.168.0.0/16", "11.0.0.0/8" ] } },
            { "Name":  "EndpointPolicy", "Value":  { "Type":  "ROUTE", "DestinationPrefix":  "11.0.0.0/8", "NeedEncap":  true } }
        ]
    }
}`;
/** microsoft/SDN Kubernetes/flannel/l2bridge/cni/config/cni.conf (shortened policies). */
const SDN_L2BRIDGE_CONF = `{
    "cniVersion":  "0.2.0",
    "name":  "cbr0",
    "type":  "flannel",
    "delegate":  {
        "type":  "l2bridge",
        "dns":  { "Nameservers":  [ "10.96.0.10" ], "Search":  [ "svc.cluster.local" ] },
        "AdditionalArgs":  [ { "Name":  "EndpointPolicy", "Value":  { "Type":  "OutBoundNAT", "ExceptionList":  [ "10.244.0.0/16", "10.96.0.0/12" ] } } ]
    }
}`;
const CALICO_CONFLIST = '{"name":"Calico","cniVersion":"0.3.1","plugins":[{"type":"calico","mode":"vxlan"}]}';

describe('earlierFlannelConfig: a flannel config of an earlier Windows install, by its content', () => {
  it.each<[string, string, string | undefined]>([
    ["sig-windows-tools' 10-flannel.conf (sdnoverlay, with a BOM)", SIG_WINDOWS_TOOLS_CONF, 'flannel with sdnoverlay: sig-windows-tools'],
    ['microsoft/SDN overlay cni.conf (win-overlay)', SDN_OVERLAY_CONF, 'flannel with win-overlay: microsoft/SDN or flanneld-windows'],
    ['microsoft/SDN l2bridge cni.conf (l2bridge)', SDN_L2BRIDGE_CONF, 'flannel with l2bridge: microsoft/SDN'],
    [
      'a flannel conflist for win-bridge',
      '{"name":"cbr0","plugins":[{"type":"flannel","delegate":{"type":"win-bridge"}}]}',
      'flannel with win-bridge: microsoft/SDN or flanneld-windows',
    ],
    ['Calico', CALICO_CONFLIST, undefined],
    ["Linux flannel's conflist (bridge delegate)", '{"name":"cbr0","plugins":[{"type":"flannel","delegate":{"type":"bridge"}}]}', undefined],
    ['flannel without a delegate', '{"name":"x","type":"flannel"}', undefined],
    ['not JSON', 'type: flannel', undefined],
    ['JSON null', 'null', undefined],
  ])('%s', (_what, text, writer) => {
    expect(earlierFlannelConfig(text)).toBe(writer);
  });

  it('backs up beside itself under a name containerd does not load, never over an earlier backup', () => {
    expect(backupPath('/d/10-flannel.conf', () => false)).toBe('/d/10-flannel.conf.bak');
    expect(backupPath('/d/10-flannel.conf', (p) => p === '/d/10-flannel.conf.bak')).toBe('/d/10-flannel.conf.bak.1');
  });
});

describe('configsBefore (go-cni order: byte-wise, .conf/.conflist/.json only)', () => {
  it.each<[string, string[], string[]]>([
    ['an empty directory', [], []],
    ['only our own file', ['10-flannel.conflist'], []],
    ["sig-windows-tools' 10-flannel.conf sorts before 10-flannel.conflist", ['10-flannel.conf', '10-flannel.conflist'], [`${DIR}/10-flannel.conf`]],
    ['a .json config sorts first', ['05-calico.json'], [`${DIR}/05-calico.json`]],
    ['configs after ours and other files are ignored', ['20-other.conflist', '00-notes.txt', '01-backup.conflist.bak'], []],
    ['upper case sorts before lower case, as in Go', ['10-Flannel.conflist'], [`${DIR}/10-Flannel.conflist`]],
  ])('%s', (_what, names, before) => {
    expect(configsBefore(FILE, () => names)).toEqual(before);
  });

  it('a missing directory has nothing before', () => {
    expect(
      configsBefore(FILE, () => {
        throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      }),
    ).toEqual([]);
  });

  it('refuses a foreign config with FLANNEL_ERR_CNI_CONF_ORDER naming the file, or only warns with force', () => {
    const err = expectCode(
      () =>
        checkCniConfOrder(
          FILE,
          false,
          () => undefined,
          () => ['10-flannel.conf'],
          () => CALICO_CONFLIST,
        ),
      CniInstallError,
      'FLANNEL_ERR_CNI_CONF_ORDER',
    );
    expect(err.context).toMatchObject({ file: FILE, before: `${DIR}/10-flannel.conf` });
    let warned = '';
    checkCniConfOrder(
      FILE,
      true,
      (t) => (warned += t),
      () => ['10-flannel.conf'],
      () => CALICO_CONFLIST,
    );
    expect(warned).toContain('10-flannel.conf sorts before 10-flannel.conflist');
  });

  it('an unreadable config is not provably flannel: refused', () => {
    expectCode(
      () =>
        checkCniConfOrder(
          FILE,
          false,
          () => undefined,
          () => ['10-flannel.conf'],
          () => {
            throw Object.assign(new Error('EACCES'), { code: 'EACCES' });
          },
        ),
      CniInstallError,
      'FLANNEL_ERR_CNI_CONF_ORDER',
    );
  });

  it("returns an earlier install's flannel config to retire, and refuses only the foreign one beside it", () => {
    const read = (p: string) => (p.endsWith('10-flannel.conf') ? SIG_WINDOWS_TOOLS_CONF : CALICO_CONFLIST);
    expect(
      checkCniConfOrder(
        FILE,
        false,
        () => undefined,
        () => ['10-flannel.conf'],
        read,
      ),
    ).toEqual([{ path: `${DIR}/10-flannel.conf`, writer: 'flannel with sdnoverlay: sig-windows-tools' }]);
    const err = expectCode(
      () =>
        checkCniConfOrder(
          FILE,
          false,
          () => undefined,
          () => ['05-calico.conflist', '10-flannel.conf'],
          read,
        ),
      CniInstallError,
      'FLANNEL_ERR_CNI_CONF_ORDER',
    );
    expect(err.context['before']).toBe(`${DIR}/05-calico.conflist`);
  });
});

describe('cni-config -o after a sig-windows-tools install', () => {
  const io = () => {
    const out = { stdout: '', stderr: '' };
    return { out, io: { stdout: (t: string) => (out.stdout += t), stderr: (t: string) => (out.stderr += t), env: {}, platform: 'linux' as NodeJS.Platform } };
  };

  it.each([
    ["sig-windows-tools' 10-flannel.conf", '10-flannel.conf', SIG_WINDOWS_TOOLS_CONF, 'sig-windows-tools'],
    ["microsoft/SDN's overlay cni.conf", '10-flannel.conf', SDN_OVERLAY_CONF, 'microsoft/SDN'],
    ["microsoft/SDN's l2bridge cni.conf as 00-cni.conf", '00-cni.conf', SDN_L2BRIDGE_CONF, 'microsoft/SDN'],
  ])('%s: backed up beside itself and replaced (exit 0), saying so', async (_what, name, content, writer) => {
    const dir = mkdtempSync(join(tmpdir(), 'cni-conf-dir-'));
    try {
      writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
      const netd = join(dir, 'net.d');
      mkdirSync(netd);
      const old = join(netd, name);
      writeFileSync(old, content);
      writeFileSync(`${old}.bak`, 'an older backup');
      const out = join(netd, '10-flannel.conflist');
      const r = io();
      expect(await command.run([`--net-config-path=${join(dir, 'net-conf.json')}`, '--management-ip=192.168.1.20', '-o', out], r.io)).toBe(0);
      expect(JSON.parse(readFileSync(out, 'utf8'))).toMatchObject({ name: 'flannel.4096' });
      expect(existsSync(old)).toBe(false);
      expect(readFileSync(`${old}.bak.1`, 'utf8')).toBe(content);
      expect(readFileSync(`${old}.bak`, 'utf8')).toBe('an older backup');
      expect(r.out.stderr).toContain(`moved ${old} (an earlier install's flannel CNI config, flannel with`);
      expect(r.out.stderr).toContain(writer);
      expect(r.out.stderr).toContain(`to ${old}.bak.1: containerd loads 10-flannel.conflist now`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes nothing while a foreign config sorts first (exit 1), writes with --force (warning), and writes once it is removed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cni-conf-dir-'));
    try {
      writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
      const netd = join(dir, 'net.d');
      mkdirSync(netd);
      const old = join(netd, '10-flannel.conf');
      writeFileSync(old, CALICO_CONFLIST);
      const out = join(netd, '10-flannel.conflist');
      const args = [`--net-config-path=${join(dir, 'net-conf.json')}`, '--management-ip=192.168.1.20', '-o', out];
      const refused = io();
      expect(await command.run(args, refused.io)).toBe(1);
      expect(refused.out.stderr).toContain(`${old} sorts before 10-flannel.conflist`);
      expect(existsSync(out)).toBe(false);

      const forced = io();
      expect(await command.run([...args, '--force'], forced.io)).toBe(0);
      expect(forced.out.stderr).toContain('warning:');
      expect(JSON.parse(readFileSync(out, 'utf8'))).toMatchObject({ name: 'flannel.4096' });

      rmSync(old);
      rmSync(out);
      const clean = io();
      expect(await command.run(args, clean.io)).toBe(0);
      expect(clean.out.stderr).not.toContain('warning');
      expect(existsSync(out)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
