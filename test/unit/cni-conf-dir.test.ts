// `cni-config -o FILE` where containerd would load another CNI config first (src/commands/cni-conf-dir.ts):
// the sig-windows-tools migration leaves C:\etc\cni\net.d\10-flannel.conf, which sorts before our
// 10-flannel.conflist, and containerd (go-cni loadFromConfDir: .conf/.conflist/.json, sort.Strings, the
// first one) would keep using it.
import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkCniConfOrder, configsBefore } from '../../src/commands/cni-conf-dir.js';
import { command } from '../../src/commands/cni-config.js';
import { CniInstallError } from '../../src/errors.js';
import { expectCode } from '../support/errors.js';

const DIR = '/etc/cni/net.d';
const FILE = `${DIR}/10-flannel.conflist`;

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

  it('refuses with FLANNEL_ERR_CNI_CONF_ORDER naming the file, or only warns with force', () => {
    const err = expectCode(
      () =>
        checkCniConfOrder(
          FILE,
          false,
          () => undefined,
          () => ['10-flannel.conf'],
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
    );
    expect(warned).toContain('10-flannel.conf sorts before 10-flannel.conflist');
  });
});

describe('cni-config -o after a sig-windows-tools install', () => {
  const io = () => {
    const out = { stdout: '', stderr: '' };
    return { out, io: { stdout: (t: string) => (out.stdout += t), stderr: (t: string) => (out.stderr += t), env: {}, platform: 'linux' as NodeJS.Platform } };
  };

  it('writes nothing while 10-flannel.conf is there (exit 1), writes with --force (warning), and writes once it is removed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cni-conf-dir-'));
    try {
      writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
      const netd = join(dir, 'net.d');
      mkdirSync(netd);
      const old = join(netd, '10-flannel.conf');
      writeFileSync(old, '{"cniVersion":"0.2.0","name":"flannel.4096","type":"flannel","delegate":{"type":"win-overlay"}}');
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
