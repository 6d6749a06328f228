import { describe, it, expect } from '@jest/globals';
import { parseConfig } from '../../../src/config/parse.js';
import type { ParseOptions } from '../../../src/config/parse.js';
import { FLAGS, envVarName, parseFlags, renderUsage } from '../../../src/config/flags.js';
import type { AgentConfig } from '../../../src/config/agent-config.js';
import { ConfigError, FlagError, FlannelError, UnsupportedError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';

const LINUX: ParseOptions = { platform: 'linux' };
const WIN: ParseOptions = { platform: 'win32' };
const BASE = ['--dataplane', 'simulated'];
const NODE_ENV = { NODE_NAME: 'node-1' };

function run(argv: string[], env: Record<string, string | undefined> = {}, opts: ParseOptions = LINUX): AgentConfig {
  const cmd = parseConfig(argv, env, opts);
  if (cmd.kind !== 'run') throw new Error(`expected run, got ${cmd.kind}`);
  return cmd.config;
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof FlannelError) return err.code;
    throw err;
  }
  return undefined;
}

describe('flag syntax', () => {
  it.each([
    ['--x=y', ['--healthz-port=8080']],
    ['--x y', ['--healthz-port', '8080']],
    ['-x=y', ['-healthz-port=8080']],
    ['-x y', ['-healthz-port', '8080']],
  ])('%s', (_label, argv) => {
    expect(run([...BASE, ...argv]).healthzPort).toBe(8080);
  });

  it.each([
    [['--ip-masq'], true],
    [['-ip-masq'], true],
    [['--ip-masq=true'], true],
    [['--ip-masq=false'], false],
    [['--ip-masq=1'], true],
    [['--ip-masq=0'], false],
    [['--ip-masq=t'], true],
    [['--ip-masq=f'], false],
    [['--ip-masq=TRUE'], true],
    [['--ip-masq=FALSE'], false],
    [['--ip-masq=True'], true],
    [['--ip-masq=False'], false],
    [[], false],
  ])('bool %j -> %s', (argv, expected) => {
    expect(run([...BASE, ...argv]).ipMasq).toBe(expected);
  });

  it.each([
    ['--set-node-network-unavailable=false', 'setNodeNetworkUnavailable', false],
    ['--kube-subnet-mgr=false', 'kubeSubnetMgr', false],
  ] as const)('%s', (arg, key, expected) => {
    expect(run([...BASE, arg])[key]).toBe(expected);
  });

  it('a boolean never swallows the next argument', () => {
    // `--ip-masq false` : `false` is a positional argument, not the value.
    expect(codeOf(() => run([...BASE, '--ip-masq', 'false']))).toBe('FLANNEL_ERR_FLAG');
    const cfg = run(['--ip-masq', '--dataplane', 'simulated', '--kube-subnet-mgr', '--healthz-port', '1'], NODE_ENV);
    expect(cfg).toMatchObject({ ipMasq: true, kubeSubnetMgr: true, healthzPort: 1, dataplane: 'simulated' });
  });

  it('repeatable flags accumulate in order', () => {
    const cfg = run([...BASE, '--iface', '10.0.0.2', '--iface=Ethernet', '-iface-regex', '^10\\.', '--iface-regex=^vEth']);
    expect(cfg.iface).toEqual(['10.0.0.2', 'Ethernet']);
    expect(cfg.ifaceRegex).toEqual(['^10\\.', '^vEth']);
  });

  it('a repeated scalar flag keeps the last value', () => {
    expect(run([...BASE, '--etcd-prefix=/a', '--etcd-prefix=/b']).etcdPrefix).toBe('/b');
  });

  it('--etcd-endpoints is a comma-separated list', () => {
    expect(run([...BASE, '--etcd-endpoints=https://a:2379, https://b:2379']).etcdEndpoints).toEqual(['https://a:2379', 'https://b:2379']);
  });

  it('--restart-service-on-hns-restart: off by default, a service name when given', () => {
    expect(run(BASE).restartServiceOnHnsRestart).toBe('');
    expect(run([...BASE, '--restart-service-on-hns-restart=kubeproxy']).restartServiceOnHnsRestart).toBe('kubeproxy');
  });

  it('--restart-service-lb-wait: 120 s by default, 0..86400 seconds', () => {
    expect(run(BASE).restartServiceLbWaitSeconds).toBe(120);
    expect(run([...BASE, '--restart-service-lb-wait=0']).restartServiceLbWaitSeconds).toBe(0);
    for (const bad of ['-1', '86401']) expect(() => run([...BASE, `--restart-service-lb-wait=${bad}`])).toThrow(/restart-service-lb-wait: out of range/);
  });

  it('-- ends the flags', () => {
    expect(run([...BASE, '--']).dataplane).toBe('simulated');
  });

  it.each([
    ['unknown flag', ['--foo'], { flag: 'foo' }],
    ['unknown flag with value', ['--foo=1'], { flag: 'foo' }],
    ['bad int', ['--healthz-port=x'], { flag: 'healthz-port', value: 'x', source: 'flag -healthz-port' }],
    ['bad bool', ['--ip-masq=yes'], { flag: 'ip-masq', value: 'yes', source: 'flag -ip-masq' }],
    ['missing value', ['--healthz-port'], { flag: 'healthz-port' }],
    ['positional', ['extra'], { arg: 'extra' }],
    ['positional after --', ['--', 'extra'], { arg: 'extra' }],
    ['bad syntax', ['---x'], { arg: '---x' }],
    ['bare dash', ['-'], { arg: '-' }],
    ['a service name the SCM refuses', ['--restart-service-on-hns-restart=kube proxy'], { flag: 'restart-service-on-hns-restart' }],
  ])('%s -> FLANNEL_ERR_FLAG', (_label, argv, context) => {
    const err = expectCode(() => run([...BASE, ...argv]), FlagError, 'FLANNEL_ERR_FLAG');
    expect(err.context).toEqual(context);
  });

  it('parseFlags returns only what was given', () => {
    const p = parseFlags(['--iface=a', '--v=3']);
    expect([...p.values.entries()]).toEqual([
      ['iface', ['a']],
      ['v', 3],
    ]);
  });
});

describe('environment fallback', () => {
  it.each([
    ['FLANNELD_KUBE_SUBNET_MGR', 'true', 'kubeSubnetMgr', true],
    ['FLANNELD_IFACE', 'Ethernet 2', 'iface', ['Ethernet 2']],
    ['FLANNELD_IFACE_REGEX', '^10\\.', 'ifaceRegex', ['^10\\.']],
    ['FLANNELD_PUBLIC_IP', '192.168.1.5', 'publicIP', '192.168.1.5'],
    ['FLANNELD_HEALTHZ_PORT', '9000', 'healthzPort', 9000],
    ['FLANNELD_IP_MASQ', '1', 'ipMasq', true],
    ['FLANNELD_SUBNET_LEASE_RENEW_MARGIN', '30', 'subnetLeaseRenewMargin', 30],
    ['FLANNELD_ETCD_ENDPOINTS', 'http://e:2379', 'etcdEndpoints', ['http://e:2379']],
    ['FLANNELD_KUBECONFIG_FILE', 'C:\\k\\config', 'kubeconfigFile', 'C:\\k\\config'],
    ['FLANNELD_DATAPLANE_STATE', '/tmp/s.json', 'dataplaneState', '/tmp/s.json'],
    ['FLANNELD_LOG_FORMAT', 'json', 'logFormat', 'json'],
    ['FLANNELD_V', '4', 'logLevel', 'debug'],
  ] as const)('%s=%s', (key, value, field, expected) => {
    expect(run(BASE, { ...NODE_ENV, [key]: value })[field]).toEqual(expected);
  });

  it('FLANNELD_DATAPLANE satisfies the dataplane requirement', () => {
    expect(run([], { FLANNELD_DATAPLANE: 'simulated' }).dataplane).toBe('simulated');
  });

  it('the flag beats the environment', () => {
    const cfg = run([...BASE, '--healthz-port=1', '--iface=a', '--kube-subnet-mgr=false'], {
      FLANNELD_HEALTHZ_PORT: '2',
      FLANNELD_IFACE: 'b',
      FLANNELD_KUBE_SUBNET_MGR: 'true',
    });
    expect(cfg).toMatchObject({ healthzPort: 1, iface: ['a'], kubeSubnetMgr: false });
  });

  it('empty environment values are ignored', () => {
    const cfg = run(BASE, { FLANNELD_HEALTHZ_IP: '', FLANNELD_ETCD_PREFIX: '', FLANNELD_KUBE_SUBNET_MGR: '' });
    expect(cfg).toMatchObject({ healthzIP: '0.0.0.0', etcdPrefix: '/coreos.com/network', kubeSubnetMgr: false });
  });

  it('a bad environment value is a flag error naming the variable', () => {
    const err = expectCode(() => run(BASE, { FLANNELD_HEALTHZ_PORT: 'abc' }), FlagError, 'FLANNEL_ERR_FLAG');
    expect(err.context).toEqual({ flag: 'healthz-port', value: 'abc', source: 'environment variable FLANNELD_HEALTHZ_PORT (flag -healthz-port)' });
  });

  it('env var names: upper case, - and . become _', () => {
    expect(envVarName('kube-subnet-mgr')).toBe('FLANNELD_KUBE_SUBNET_MGR');
    expect(envVarName('a.b-c')).toBe('FLANNELD_A_B_C');
  });
});

describe('env file', () => {
  const files: Record<string, string> = {
    '/etc/flannel.env': 'FLANNELD_HEALTHZ_PORT=7000\nFLANNELD_ETCD_PREFIX=/from-file\nexport FLANNELD_PUBLIC_IP=10.1.1.1\n# comment\n\nNODE_NAME="file-node"\n',
    '/etc/crlf.env': 'FLANNELD_HEALTHZ_PORT=7001\r\nFLANNELD_IP_MASQ=true\r\n',
    // PowerShell 5 `Out-File -Encoding utf8`: a UTF-8 BOM (decoded as U+FEFF) before the first name
    '/etc/bom.env': '\uFEFFFLANNELD_HEALTHZ_PORT=7002\r\nFLANNELD_IP_MASQ=true\r\n',
    '/etc/bad.env': 'FLANNELD_HEALTHZ_PORT=7000\nthis is not a variable\n',
  };
  const readFile = (p: string): string => {
    const t = files[p];
    if (t === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
    return t;
  };
  const opts: ParseOptions = { platform: 'linux', readFile };

  it('values from the file are used', () => {
    const cfg = run([...BASE, '--env-file', '/etc/flannel.env', '--kube-subnet-mgr'], {}, opts);
    expect(cfg).toMatchObject({ healthzPort: 7000, etcdPrefix: '/from-file', publicIP: '10.1.1.1', nodeName: 'file-node' });
  });

  it('FLANNELD_ENV_FILE names the file; CRLF files work', () => {
    expect(run(BASE, { FLANNELD_ENV_FILE: '/etc/crlf.env' }, opts)).toMatchObject({ healthzPort: 7001, ipMasq: true });
  });

  // Already true before the BOM fix (dotenv's line pattern and ours take U+FEFF for \s); kept as a guard.
  it('a file starting with a UTF-8 BOM: its first variable is read', () => {
    expect(run(BASE, { FLANNELD_ENV_FILE: '/etc/bom.env' }, opts)).toMatchObject({ healthzPort: 7002, ipMasq: true });
  });

  it('--etcd-password-file written with a UTF-8 BOM: the BOM is not part of the password', () => {
    const pw: ParseOptions = { platform: 'linux', readFile: (p) => (p === '/etc/etcd.pw' ? '\uFEFFs3cret\r\n' : readFile(p)) };
    expect(run([...BASE, '--etcd-password-file=/etc/etcd.pw'], {}, pw).etcdPassword).toBe('s3cret');
  });

  it('real environment and flags win over the file', () => {
    const cfg = run([...BASE, '--env-file=/etc/flannel.env', '--etcd-prefix=/from-flag'], { FLANNELD_HEALTHZ_PORT: '8000', NODE_NAME: 'env-node' }, opts);
    expect(cfg).toMatchObject({ healthzPort: 8000, etcdPrefix: '/from-flag', publicIP: '10.1.1.1', nodeName: 'env-node' });
  });

  it.each([
    ['missing file', '/etc/nope.env', { path: '/etc/nope.env' }],
    ['unparseable line', '/etc/bad.env', { path: '/etc/bad.env', line: 2 }],
  ])('%s -> FLANNEL_ERR_ENV_FILE', (_label, path, context) => {
    const err = expectCode(() => run([...BASE, `--env-file=${path}`], {}, opts), ConfigError, 'FLANNEL_ERR_ENV_FILE');
    expect(err.context).toEqual(context);
  });
});

describe('validation', () => {
  it.each([
    [['--subnet-lease-renew-margin=0'], 'FLANNEL_ERR_FLAG'],
    [['--subnet-lease-renew-margin=1'], undefined],
    [['--subnet-lease-renew-margin=1439'], undefined],
    [['--subnet-lease-renew-margin=1440'], 'FLANNEL_ERR_FLAG'],
    [['--subnet-lease-renew-margin=-5'], 'FLANNEL_ERR_FLAG'],
    [['--healthz-port=65535'], undefined],
    [['--healthz-port=65536'], 'FLANNEL_ERR_FLAG'],
    [['--healthz-port=-1'], 'FLANNEL_ERR_FLAG'],
    [['--healthz-stale-after=0'], undefined],
    [['--healthz-stale-after=86400'], undefined],
    [['--healthz-stale-after=-1'], 'FLANNEL_ERR_FLAG'],
    [['--healthz-stale-after=86401'], 'FLANNEL_ERR_FLAG'],
    [['--healthz-stale-after=5m'], 'FLANNEL_ERR_FLAG'],
    [['--public-ip=10.0.0.5'], undefined],
    [['--public-ip=fe80::1'], 'FLANNEL_ERR_FLAG'],
    [['--public-ip=node-1'], 'FLANNEL_ERR_FLAG'],
    [['--healthz-ip=127.0.0.1'], undefined],
    [['--healthz-ip=::'], 'FLANNEL_ERR_FLAG'],
    [['--dataplane=hyperv'], 'FLANNEL_ERR_FLAG'],
    [['--log-level=trace'], 'FLANNEL_ERR_FLAG'],
    [['--log-format=xml'], 'FLANNEL_ERR_FLAG'],
    [['--v=-1'], 'FLANNEL_ERR_FLAG'],
    [['--kube-annotation-prefix=a/b/c'], 'FLANNEL_ERR_ANNOTATION_PREFIX'],
    [['--kube-annotation-prefix=Bad_Prefix'], 'FLANNEL_ERR_ANNOTATION_PREFIX'],
    [['--iface-can-reach=8.8.8.8'], 'FLANNEL_ERR_UNSUPPORTED'],
    [['--etcd-endpoints=,'], 'FLANNEL_ERR_FLAG'],
  ])('%j -> %s', (argv, code) => {
    expect(codeOf(() => run([...BASE, ...argv]))).toBe(code);
  });

  it('--iface-can-reach says it is not supported on Windows (also from the environment)', () => {
    const err = expectCode(() => run(BASE, { FLANNELD_IFACE_CAN_REACH: '8.8.8.8' }), UnsupportedError, 'FLANNEL_ERR_UNSUPPORTED');
    expect(err.context).toEqual({ flag: 'iface-can-reach', value: '8.8.8.8' });
  });

  it('the annotation prefix is normalised', () => {
    expect(run(BASE).kubeAnnotationPrefix).toBe('flannel.alpha.coreos.com/');
    expect(run([...BASE, '--kube-annotation-prefix=example.com/my']).kubeAnnotationPrefix).toBe('example.com/my-');
  });

  it.each(['--iptables-resync=10', '--iptables-forward-rules=false', '--ip-masq-fully-random-disable', '--ip-blackhole-route'])('accepted and ignored: %s', (arg) => {
    expect(run([...BASE, arg]).dataplane).toBe('simulated');
  });

  it('--public-ipv6 is read (dual-stack) and must be an IPv6 address', () => {
    expect(run([...BASE, '--public-ipv6=fd00::1']).publicIPv6).toBe('fd00::1');
    expect(run(BASE)).not.toHaveProperty('publicIPv6');
    expectCode(() => run([...BASE, '--public-ipv6=10.0.0.1']), FlagError, 'FLANNEL_ERR_FLAG');
  });
});

describe('defaults and platforms', () => {
  it('Linux defaults', () => {
    const cfg = run(BASE);
    expect(cfg).toEqual({
      kubeSubnetMgr: false,
      kubeconfigFile: '',
      kubeApiUrl: '',
      kubeAnnotationPrefix: 'flannel.alpha.coreos.com/',
      netConfigPath: '/etc/kube-flannel/net-conf.json',
      subnetFile: '/run/flannel/subnet.env',
      iface: [],
      ifaceRegex: [],
      publicIP: '',
      networkPolicy: false,
      ipMasq: false,
      healthzIP: '0.0.0.0',
      healthzPort: 0,
      healthzStaleAfterSeconds: 300,
      setNodeNetworkUnavailable: true,
      subnetLeaseRenewMargin: 60,
      nodeWaitTimeoutSeconds: 300,
      etcdEndpoints: ['http://127.0.0.1:4001', 'http://127.0.0.1:2379'],
      etcdPrefix: '/coreos.com/network',
      etcdKeyfile: '',
      etcdCertfile: '',
      etcdCafile: '',
      etcdUsername: '',
      etcdPassword: '',
      dataplane: 'simulated',
      dataplaneState: '',
      win32DllDir: '',
      hnsCallTimeoutSeconds: 120,
      hnsPolicyBatchSize: 200,
      restartServiceOnHnsRestart: '',
      restartServiceLbWaitSeconds: 120,
      sourceVipFile: '',
      sourceVipCompatFiles: [],
      cniIpamDataDir: '',
      cniConfDir: '',
      cniBinDir: '',
      containerdConfig: '',
      cniDirsGiven: { confDir: false, binDir: false },
      logLevel: 'info',
      logFormat: 'text',
      logFile: '',
      nodeName: undefined,
      podName: undefined,
      podNamespace: undefined,
      inClusterEnv: { KUBERNETES_SERVICE_HOST: undefined, KUBERNETES_SERVICE_PORT: undefined, CONTAINER_SANDBOX_MOUNT_POINT: undefined },
    } satisfies AgentConfig);
  });

  it('Windows defaults: paths and dataplane', () => {
    const cfg = run([], {}, WIN);
    expect(cfg).toMatchObject({
      netConfigPath: 'C:\\etc\\kube-flannel\\net-conf.json',
      subnetFile: 'C:\\run\\flannel\\subnet.env',
      sourceVipFile: 'C:\\run\\flannel\\sourcevip.json',
      sourceVipCompatFiles: ['C:\\k\\sourceVip.json', 'C:\\sourcevip\\sourceVip.json'],
      cniIpamDataDir: 'C:\\var\\lib\\cni\\networks',
      cniConfDir: 'C:\\etc\\cni\\net.d',
      cniBinDir: 'C:\\opt\\cni\\bin',
      dataplane: 'windows',
    });
  });

  it("the usage text shows one default per flag, the running platform's, and it is the one the config uses", () => {
    const text = (opts: { platform: NodeJS.Platform }) => {
      const cmd = parseConfig(['--help'], {}, opts);
      if (cmd.kind !== 'help') throw new Error('expected help');
      return cmd.text;
    };
    const win = text(WIN);
    const linux = text(LINUX);
    expect(win).toContain('(default "C:\\run\\flannel\\subnet.env")');
    expect(win).toContain('(default "C:\\etc\\kube-flannel\\net-conf.json")');
    expect(win).toContain('(default "windows")');
    expect(win).not.toMatch(/\/run\/flannel|\/etc\/kube-flannel|Windows default|Linux:/);
    expect(linux).toContain('(default "/run/flannel/subnet.env")');
    expect(linux).not.toMatch(/C:\\|Windows default/);
    const cfg = run([], {}, WIN);
    const resolved: Record<string, unknown> = {
      'net-config-path': cfg.netConfigPath,
      'subnet-file': cfg.subnetFile,
      'source-vip-file': cfg.sourceVipFile,
      'source-vip-compat-files': cfg.sourceVipCompatFiles.join(','),
      'cni-ipam-data-dir': cfg.cniIpamDataDir,
      'cni-conf-dir': cfg.cniConfDir,
      'cni-bin-dir': cfg.cniBinDir,
      'containerd-config': cfg.containerdConfig,
      dataplane: cfg.dataplane,
    };
    const withWindowsDefault = FLAGS.filter((f) => f.windowsDefault !== undefined);
    expect(withWindowsDefault.map((f) => f.name).sort()).toEqual(Object.keys(resolved).sort());
    for (const f of withWindowsDefault) expect([f.name, f.windowsDefault]).toEqual([f.name, resolved[f.name]]);
  });

  it('explicit paths win on Windows', () => {
    const cfg = run(['--net-config-path=D:\\n.json', '--subnet-file=D:\\s.env', '--dataplane=simulated'], {}, WIN);
    expect(cfg).toMatchObject({ netConfigPath: 'D:\\n.json', subnetFile: 'D:\\s.env', dataplane: 'simulated' });
  });

  it.each(['linux', 'darwin'] as const)('missing --dataplane on %s is a flag error telling what to pass', (platform) => {
    const err = expectCode(() => run([], {}, { platform }), FlagError, 'FLANNEL_ERR_FLAG');
    expect(err.context).toEqual({ flag: 'dataplane', platform });
  });

  it.each([
    [[], {}, 'info'],
    [['-v=1'], {}, 'info'],
    [['-v', '2'], {}, 'debug'],
    [['--v=5'], {}, 'debug'],
    [['-v=5', '--log-level=warn'], {}, 'warn'],
    [['-v=5'], { FLANNELD_LOG_LEVEL: 'error' }, 'error'],
    [['--log-level=debug'], {}, 'debug'],
  ])('log level for %j %j -> %s', (argv, env, level) => {
    expect(run([...BASE, ...argv], env).logLevel).toBe(level);
  });

  // Upstream's EVENT_QUEUE_DEPTH and CONT_WHEN_CACHE_NOT_READY (kube-flannel.yml sets them) are accepted
  // and ignored: any value, even one upstream would not parse, yields the same configuration as none.
  it.each([{ EVENT_QUEUE_DEPTH: '5000', CONT_WHEN_CACHE_NOT_READY: 'false' }, { EVENT_QUEUE_DEPTH: 'lots', CONT_WHEN_CACHE_NOT_READY: 'maybe' }, { EVENT_QUEUE_DEPTH: '0' }])(
    '%j is ignored',
    (env) => {
      expect(run(BASE, env)).toEqual(run(BASE, {}));
    },
  );
});

describe('node name', () => {
  const KSM = [...BASE, '--kube-subnet-mgr'];
  it.each([
    [{ NODE_NAME: 'n1' }, { nodeName: 'n1' }],
    [{ NODE_NAME: 'n1', POD_NAME: 'p', POD_NAMESPACE: 'kube-flannel' }, { nodeName: 'n1' }],
    [
      { POD_NAME: 'p', POD_NAMESPACE: 'kube-flannel' },
      { nodeName: undefined, podName: 'p', podNamespace: 'kube-flannel' },
    ],
    [
      { NODE_NAME: '', POD_NAME: 'p', POD_NAMESPACE: 'ns' },
      { nodeName: undefined, podName: 'p', podNamespace: 'ns' },
    ],
  ])('%j', (env, expected) => {
    expect(run(KSM, env)).toMatchObject(expected);
  });

  it.each([{}, { POD_NAME: 'p' }, { POD_NAMESPACE: 'ns' }, { NODE_NAME: '', POD_NAME: 'p', POD_NAMESPACE: '' }])(
    '%j in kube mode -> FLANNEL_ERR_CONFIG naming the missing variables',
    (env) => {
      const err = expectCode(() => run(KSM, env), ConfigError, 'FLANNEL_ERR_CONFIG');
      expect(err.context.missingEnv).toBe('POD_NAME POD_NAMESPACE');
    },
  );

  it('etcd mode needs no node name', () => {
    expect(run(BASE, {}).nodeName).toBeUndefined();
  });
});

describe('--help and --version', () => {
  it.each([['--help'], ['-help'], ['-h'], ['--h']])('%s renders usage', (arg) => {
    const cmd = parseConfig([arg], {}, LINUX);
    expect(cmd.kind).toBe('help');
  });

  it('help wins even before an unknown flag and without --dataplane', () => {
    expect(parseConfig(['--help', '--bogus'], {}, LINUX).kind).toBe('help');
  });

  it('usage lists every flag but the test harness flag, with its default and help', () => {
    const cmd = parseConfig(['--help'], {}, LINUX);
    if (cmd.kind !== 'help') throw new Error('expected help');
    expect(cmd.text).toBe(renderUsage());
    for (const f of FLAGS.filter((x) => !x.harness)) {
      expect(cmd.text).toContain(`--${f.name}`);
      expect(cmd.text).toContain(f.help);
    }
    // --win32-dll-dir is the Wine harness's: accepted, not offered to operators.
    expect(FLAGS.filter((x) => x.harness).map((x) => x.name)).toEqual(['win32-dll-dir']);
    expect(cmd.text).not.toContain('--win32-dll-dir');
    expect(run([...BASE, '--win32-dll-dir', 'C:\\stand-ins']).win32DllDir).toBe('C:\\stand-ins');
    expect(cmd.text).toContain('(default "http://127.0.0.1:4001,http://127.0.0.1:2379")');
    expect(cmd.text).toContain('(default 60)');
    expect(cmd.text).toContain('(default "flannel.alpha.coreos.com")');
  });

  it.each([[['--version']], [['-version']], [['--version=true', '--dataplane=simulated']]])('%j -> version', (argv) => {
    expect(parseConfig(argv, {}, LINUX)).toEqual({ kind: 'version' });
  });

  it('--version=false runs', () => {
    expect(parseConfig(['--version=false', ...BASE], {}, LINUX).kind).toBe('run');
  });
});
