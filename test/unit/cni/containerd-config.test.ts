// containerd's config.toml read for its CNI directories (src/cni/containerd-config.ts): the fixtures of
// containerd 1.7, 2.0, 2.1 and 2.2 (test/fixtures/containerd/README.md says where each shape comes from),
// containerd's bin_dir / bin_dirs rules (internal/cri/config/config.go ValidateRuntimeConfig), and a bad
// file as FLANNEL_ERR_CONTAINERD_CONFIG, never a crash.
import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../../src/basics/errors.js';
import { chooseCniDir, parseContainerdCni, readContainerdCni } from '../../../src/cni/containerd-config.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'containerd');
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');
const PF_BIN = 'C:\\Program Files\\containerd\\cni\\bin';
const PF_CONF = 'C:\\Program Files\\containerd\\cni\\conf';

function refusal(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).code).toBe('FLANNEL_ERR_CONTAINERD_CONFIG');
    return err as ConfigError;
  }
  throw new Error('expected FLANNEL_ERR_CONTAINERD_CONFIG');
}

describe('containerd config.toml: the CNI directories of each release', () => {
  it.each([
    ['containerd-1.7.toml', 2, 'plugins."io.containerd.grpc.v1.cri".cni', 'c:/opt/cni/bin', 'bin_dir', 'c:/etc/cni/net.d'],
    ['containerd-2.0.toml', 3, 'plugins."io.containerd.cri.v1.runtime".cni', PF_BIN, 'bin_dir', PF_CONF],
    ['containerd-2.1.toml', 3, 'plugins."io.containerd.cri.v1.runtime".cni', 'C:\\opt\\cni\\bin', 'bin_dirs[0]', 'C:\\etc\\cni\\net.d'],
    // bin_dir set, bin_dirs at its default: containerd drops the default and runs bin_dir.
    ['containerd-2.2.toml', 3, 'plugins."io.containerd.cri.v1.runtime".cni', 'C:\\opt\\cni\\bin', 'bin_dir', 'C:\\etc\\cni\\net.d'],
  ])('%s', (name, version, table, binDir, binDirFrom, confDir) => {
    expect(parseContainerdCni(fixture(name), name, 'win32')).toEqual({ file: name, version, table, binDir, binDirFrom, confDir, confDirFrom: 'conf_dir' });
  });

  it("a table or key left out keeps containerd's default for the platform", () => {
    expect(parseContainerdCni('version = 3\n', 'c.toml', 'win32')).toMatchObject({ binDir: PF_BIN, binDirFrom: 'default', confDir: PF_CONF, confDirFrom: 'default' });
    expect(parseContainerdCni('version = 2\n[plugins."io.containerd.grpc.v1.cri".cni]\nconf_dir = "/x"\n', 'c.toml', 'linux')).toMatchObject({
      binDir: '/opt/cni/bin',
      binDirFrom: 'default',
      confDir: '/x',
    });
    // A version 3 file's old plugin id is not where containerd 2 reads CNI from (no migration for version 3).
    expect(parseContainerdCni('version = 3\n[plugins."io.containerd.grpc.v1.cri".cni]\nbin_dir = "D:\\\\cni"\n', 'c.toml', 'win32')).toMatchObject({ binDirFrom: 'default' });
  });

  it('version 4 (containerd 2.3) keeps version 3 CNI table', () => {
    expect(parseContainerdCni("version = 4\n[plugins.'io.containerd.cri.v1.runtime'.cni]\nbin_dirs = ['D:\\cni']\n", 'c.toml', 'win32')).toMatchObject({ binDir: 'D:\\cni' });
  });

  it('bin_dir and a non-default bin_dirs together: refused as containerd refuses it', () => {
    const text = fixture('containerd-2.1.toml').replace("bin_dir = ''", "bin_dir = 'D:\\cni'");
    expect(refusal(() => parseContainerdCni(text, 'c.toml', 'win32')).context).toMatchObject({ reason: 'bin-dir-and-bin-dirs' });
  });

  it.each([
    ['not TOML', 'version = 3\n[plugins\n', 'toml'],
    ['version 1 (no version key)', '[plugins.cri.cni]\nbin_dir = "C:\\\\x"\n', 'version'],
    ['a version newer than 4', 'version = 5\n', 'version'],
    ['a version that is not a number', 'version = "3"\n', 'version'],
    ['bin_dirs not a list of strings', "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\nbin_dirs = 'C:\\x'\n", 'type'],
    ['an empty bin_dirs', "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\nbin_dirs = []\n", 'type'],
    ['conf_dir not a string', "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\nconf_dir = 1\n", 'type'],
  ])('%s: FLANNEL_ERR_CONTAINERD_CONFIG', (_what, text, reason) => {
    expect(refusal(() => parseContainerdCni(text, 'c.toml', 'win32')).context).toEqual({ path: 'c.toml', reason });
  });
});

describe('containerd config.toml: the bounded read', () => {
  const dir = mkdtempSync(join(tmpdir(), 'containerd-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('no file (or no path): undefined, the flags stand', () => {
    expect(readContainerdCni(join(dir, 'absent.toml'), 'win32')).toBeUndefined();
    expect(readContainerdCni('', 'win32')).toBeUndefined();
  });

  it('a directory or a file past the 1 MiB cap: FLANNEL_ERR_CONTAINERD_CONFIG, not read', () => {
    mkdirSync(join(dir, 'config.d'));
    expect(refusal(() => readContainerdCni(join(dir, 'config.d'), 'win32')).context).toMatchObject({ reason: 'unreadable' });
    writeFileSync(join(dir, 'big.toml'), `version = 3\n${'#'.repeat(1024 * 1024)}\n`);
    expect(refusal(() => readContainerdCni(join(dir, 'big.toml'), 'win32')).context).toMatchObject({ reason: 'unreadable' });
  });

  it('a real file is parsed', () => {
    writeFileSync(join(dir, 'config.toml'), fixture('containerd-2.1.toml'));
    expect(readContainerdCni(join(dir, 'config.toml'), 'win32')).toMatchObject({ binDir: 'C:\\opt\\cni\\bin' });
  });
});

describe('a flag against containerd', () => {
  const containerd = parseContainerdCni(fixture('containerd-2.1.toml'), 'config.toml', 'win32');
  it("a flag not given takes containerd's directory; one given wins, with a warning naming both fixes when it differs", () => {
    expect(chooseCniDir('bin', { flag: '--bin-dir', value: 'C:\\opt\\cni\\bin', given: false }, containerd)).toEqual({ dir: 'C:\\opt\\cni\\bin' });
    expect(chooseCniDir('conf', { flag: '--cni-conf-dir', value: 'D:\\x', given: false }, containerd)).toEqual({ dir: 'C:\\etc\\cni\\net.d' });
    expect(chooseCniDir('bin', { flag: '--bin-dir', value: 'c:/OPT/cni/bin', given: true }, containerd)).toEqual({ dir: 'c:/OPT/cni/bin' });
    const r = chooseCniDir('bin', { flag: '--cni-bin-dir', value: 'D:\\cni', given: true }, containerd);
    expect(r.dir).toBe('D:\\cni');
    expect(r.warning?.detail).toBe('--cni-bin-dir D:\\cni is not where containerd runs CNI plugins from: C:\\opt\\cni\\bin (bin_dirs[0] in config.toml)');
    expect(r.warning?.fix).toBe('pass --cni-bin-dir C:\\opt\\cni\\bin, or set bin_dirs = [\'D:\\cni\'] in plugins."io.containerd.cri.v1.runtime".cni (then restart containerd)');
    expect(chooseCniDir('bin', { flag: '--bin-dir', value: 'D:\\cni', given: true }, undefined)).toEqual({ dir: 'D:\\cni' });
  });
});
