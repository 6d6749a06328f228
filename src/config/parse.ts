// Assemble the AgentConfig from argv, FLANNELD_* environment and an optional dotenv file.
// Mirrors flannel main.go (flag parsing, flagsFromEnv, option validation) and the NODE_NAME /
// POD_NAME rules of pkg/subnet/kube/kube.go. Pure: the environment is a parameter, never process.env.
import { isIPv4, isIPv6 } from 'node:net';
import dotenv from 'dotenv';
import { ConfigError, errorMessage, FlagError, FlannelError, UnsupportedError } from '../basics/errors.js';
import { MAX_CONFIG_FILE_BYTES, readRegularFile } from '../basics/fs.js';
import { withoutBom } from '../basics/bom.js';
import type { LogLevel } from '../basics/log.js';
import { normalizeAnnotationPrefix } from './annotation-prefix.js';
import type { AgentConfig, Dataplane } from './agent-config.js';
import { FLAGS, applyFlagValue, envVarName, parseFlags, platformDefault, renderUsage } from './flags.js';
import type { FlagValue } from './flags.js';

/** Upper bound of --hns-policy-batch-size (a request of this many policies is already ~2 MB of JSON). */
const MAX_POLICY_BATCH = 10_000;

export type ParsedCommand = { kind: 'help'; text: string } | { kind: 'version' } | { kind: 'run'; config: AgentConfig };

export interface ParseOptions {
  platform: NodeJS.Platform;
  /** Reads a text file (the env file, the etcd password file); default: a regular file of at most 1 MiB (src/basics/fs.ts). */
  readFile?: (path: string, what: string) => string;
  /** Program name shown in the usage text. */
  program?: string;
}

export type Env = Record<string, string | undefined>;

// Windows defaults come from the flag table (flags.ts `windowsDefault`), which --help shows.

const LOG_LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug'];
const DATAPLANES: readonly Dataplane[] = ['windows', 'simulated'];

export function parseConfig(argv: readonly string[], env: Env, opts: ParseOptions): ParsedCommand {
  const cli = parseFlags(argv);
  if (cli.help) return { kind: 'help', text: renderUsage(opts.program, FLAGS, opts.platform) };
  if (cli.values.get('version') === true) return { kind: 'version' };

  const realEnv = nonEmpty(env);
  const envFilePath = (cli.values.get('env-file') as string | undefined) || realEnv['FLANNELD_ENV_FILE'] || '';
  const readFile = opts.readFile ?? ((p: string, what: string) => readRegularFile(p, MAX_CONFIG_FILE_BYTES, what));
  const fileEnv = envFilePath ? readEnvFile(envFilePath, (p) => readFile(p, '--flanneld-env-file')) : {};
  // Precedence: flags > real environment > env file.
  const merged: Record<string, string> = { ...nonEmpty(fileEnv), ...realEnv };

  const explicit = new Set<string>(cli.values.keys());
  const values = new Map<string, FlagValue>(cli.values);
  for (const spec of FLAGS) {
    if (values.has(spec.name) || spec.noEnv || spec.name === 'env-file') continue;
    const key = envVarName(spec.name);
    const raw = merged[key];
    if (raw === undefined) continue;
    values.set(spec.name, applyFlagValue(spec, undefined, raw, `environment variable ${key} (flag -${spec.name})`));
    explicit.add(spec.name);
  }
  const value = (name: string): FlagValue => (values.has(name) ? values.get(name)! : platformDefault(flagSpec(name), opts.platform));
  const str = (name: string): string => value(name) as string;
  /** Whether a string flag was given (flag or environment) a non-empty value. */
  const given = (name: string): boolean => values.has(name) && str(name).trim() !== '';
  const int = (name: string): number => value(name) as number;
  const bool = (name: string): boolean => value(name) as boolean;
  const list = (name: string): string[] => (values.has(name) ? [...(values.get(name) as string[])] : []);

  const win = opts.platform === 'win32';

  if (str('iface-can-reach') !== '') {
    throw new UnsupportedError(
      'FLANNEL_ERR_UNSUPPORTED',
      `--iface-can-reach is not supported on Windows; choose the interface with --iface (IP or adapter name) or --iface-regex`,
      {
        flag: 'iface-can-reach',
        value: str('iface-can-reach'),
      },
    );
  }

  const kubeSubnetMgr = bool('kube-subnet-mgr');

  const renew = int('subnet-lease-renew-margin');
  if (renew < 1 || renew > 1439) {
    throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${renew}" for flag -subnet-lease-renew-margin: out of range, must be 1..1439 (minutes)`, {
      flag: 'subnet-lease-renew-margin',
      value: renew,
    });
  }
  const healthzPort = int('healthz-port');
  if (healthzPort < 0 || healthzPort > 65535) {
    throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${healthzPort}" for flag -healthz-port: out of range, must be 0..65535 (0 disables the health server)`, {
      flag: 'healthz-port',
      value: healthzPort,
    });
  }
  const nodeWaitTimeout = int('node-wait-timeout');
  if (nodeWaitTimeout < 1) {
    throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${nodeWaitTimeout}" for flag -node-wait-timeout: must be at least 1 (seconds)`, {
      flag: 'node-wait-timeout',
      value: nodeWaitTimeout,
    });
  }
  const hnsCallTimeout = int('hns-call-timeout');
  if (hnsCallTimeout < 0 || hnsCallTimeout > 86_400) {
    throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${hnsCallTimeout}" for flag -hns-call-timeout: out of range, must be 0..86400 (seconds; 0 waits forever)`, {
      flag: 'hns-call-timeout',
      value: hnsCallTimeout,
    });
  }
  const restartServiceOnHnsRestart = str('restart-service-on-hns-restart');
  // A service name the SCM accepts (at most 256 characters; no slashes; winsvc.h CreateServiceW).
  if (restartServiceOnHnsRestart !== '' && !/^[A-Za-z0-9_.-]{1,256}$/.test(restartServiceOnHnsRestart)) {
    throw new FlagError(
      'FLANNEL_ERR_FLAG',
      `invalid value "${restartServiceOnHnsRestart}" for flag -restart-service-on-hns-restart: a Windows service name (letters, digits, _ . - only), e.g. kubeproxy`,
      { flag: 'restart-service-on-hns-restart' },
    );
  }
  const restartServiceLbWait = int('restart-service-lb-wait');
  if (restartServiceLbWait < 0 || restartServiceLbWait > 86_400) {
    throw new FlagError(
      'FLANNEL_ERR_FLAG',
      `invalid value "${restartServiceLbWait}" for flag -restart-service-lb-wait: out of range, must be 0..86400 (seconds; 0 restarts the service without waiting)`,
      { flag: 'restart-service-lb-wait', value: restartServiceLbWait },
    );
  }
  if (bool('network-policy') && !bool('kube-subnet-mgr')) {
    throw new FlagError(
      'FLANNEL_ERR_FLAG',
      'flag -network-policy needs -kube-subnet-mgr: the NetworkPolicies, Pods and Namespaces come from the API server; add --kube-subnet-mgr or drop --network-policy',
      {
        flag: 'network-policy',
      },
    );
  }
  const hnsPolicyBatchSize = int('hns-policy-batch-size');
  if (hnsPolicyBatchSize < 1 || hnsPolicyBatchSize > MAX_POLICY_BATCH) {
    throw new FlagError(
      'FLANNEL_ERR_FLAG',
      `invalid value "${hnsPolicyBatchSize}" for flag -hns-policy-batch-size: out of range, must be 1..${MAX_POLICY_BATCH} (policies per HcnModifyNetwork call; 1 = one per call, as upstream)`,
      { flag: 'hns-policy-batch-size', value: hnsPolicyBatchSize },
    );
  }
  const healthzStaleAfter = int('healthz-stale-after');
  if (healthzStaleAfter < 0 || healthzStaleAfter > 86_400) {
    throw new FlagError(
      'FLANNEL_ERR_FLAG',
      `invalid value "${healthzStaleAfter}" for flag -healthz-stale-after: out of range, must be 0..86400 (seconds; 0 never fails /healthz)`,
      {
        flag: 'healthz-stale-after',
        value: healthzStaleAfter,
      },
    );
  }
  const publicIP = str('public-ip');
  requireIPv4('public-ip', publicIP, true);
  const publicIPv6 = str('public-ipv6');
  if (publicIPv6 !== '' && !isIPv6(publicIPv6)) {
    throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${publicIPv6}" for flag -public-ipv6: not an IPv6 address (e.g. 2001:db8::10)`, {
      flag: 'public-ipv6',
      value: publicIPv6,
    });
  }
  const healthzIP = str('healthz-ip');
  requireIPv4('healthz-ip', healthzIP, false);

  const verbosity = int('v');
  if (verbosity < 0) {
    throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${verbosity}" for flag -v: must be >= 0`, { flag: 'v', value: verbosity });
  }

  const dataplaneRaw = str('dataplane');
  let dataplane: Dataplane;
  if (dataplaneRaw === '') {
    if (!win) {
      throw new FlagError(
        'FLANNEL_ERR_FLAG',
        `flag -dataplane is required on ${opts.platform}: pass --dataplane simulated (--dataplane windows programs HNS and needs a Windows host)`,
        {
          flag: 'dataplane',
          platform: opts.platform,
        },
      );
    }
    dataplane = 'windows';
  } else {
    dataplane = oneOf('dataplane', dataplaneRaw, DATAPLANES);
  }

  let logLevel: LogLevel = oneOf('log-level', str('log-level'), LOG_LEVELS);
  if (!explicit.has('log-level') && verbosity >= 2) logLevel = 'debug';
  const logFormat = oneOf('log-format', str('log-format'), ['text', 'json'] as const);

  const etcdEndpoints = str('etcd-endpoints')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (!kubeSubnetMgr && etcdEndpoints.length === 0) {
    throw new FlagError('FLANNEL_ERR_FLAG', 'flag -etcd-endpoints is empty: give at least one etcd URL, or use --kube-subnet-mgr', { flag: 'etcd-endpoints' });
  }

  const kubeAnnotationPrefix = normalizeAnnotationPrefix(str('kube-annotation-prefix'));

  const node = nodeIdentity(merged, kubeSubnetMgr);

  const config: AgentConfig = {
    kubeSubnetMgr,
    kubeconfigFile: str('kubeconfig-file'),
    kubeApiUrl: str('kube-api-url'),
    kubeAnnotationPrefix,
    netConfigPath: str('net-config-path'),
    subnetFile: str('subnet-file'),
    iface: list('iface'),
    ifaceRegex: list('iface-regex'),
    publicIP,
    ...(publicIPv6 !== '' ? { publicIPv6 } : {}),
    ...(bool('ipv4-only') ? { ipv4Only: true } : {}),
    networkPolicy: bool('network-policy'),
    ipMasq: bool('ip-masq'),
    healthzIP,
    healthzPort,
    healthzStaleAfterSeconds: healthzStaleAfter,
    setNodeNetworkUnavailable: bool('set-node-network-unavailable'),
    subnetLeaseRenewMargin: renew,
    nodeWaitTimeoutSeconds: nodeWaitTimeout,
    etcdEndpoints,
    etcdPrefix: str('etcd-prefix'),
    etcdKeyfile: str('etcd-keyfile'),
    etcdCertfile: str('etcd-certfile'),
    etcdCafile: str('etcd-cafile'),
    etcdUsername: str('etcd-username'),
    etcdPassword: etcdPassword(str('etcd-password'), str('etcd-password-file'), (f) => readFile(f, '--etcd-password-file')),
    dataplane,
    dataplaneState: str('dataplane-state'),
    win32DllDir: str('win32-dll-dir'),
    hnsCallTimeoutSeconds: hnsCallTimeout,
    hnsPolicyBatchSize,
    restartServiceOnHnsRestart,
    restartServiceLbWaitSeconds: restartServiceLbWait,
    ...sourceVipSettings((name) => (values.has(name) ? str(name) : ''), opts.platform, str('subnet-file')),
    containerdConfig: str('containerd-config').trim(),
    cniDirsGiven: { confDir: given('cni-conf-dir'), binDir: given('cni-bin-dir') },
    logLevel,
    logFormat,
    logFile: str('log-file'),
    ...node,
    inClusterEnv: {
      KUBERNETES_SERVICE_HOST: merged['KUBERNETES_SERVICE_HOST'],
      KUBERNETES_SERVICE_PORT: merged['KUBERNETES_SERVICE_PORT'],
      CONTAINER_SANDBOX_MOUNT_POINT: merged['CONTAINER_SANDBOX_MOUNT_POINT'],
    },
  };
  return { kind: 'run', config };
}

/**
 * Source VIP paths, from the flags given: "none" disables one; empty takes the platform default (on Windows:
 * on; elsewhere: off unless given). On Windows the source VIP file's default sits beside --subnet-file.
 */
function sourceVipSettings(
  given: (name: string) => string,
  platform: NodeJS.Platform,
  subnetFile: string,
): Pick<AgentConfig, 'sourceVipFile' | 'sourceVipCompatFiles' | 'cniIpamDataDir' | 'cniConfDir' | 'cniBinDir'> {
  const win = platform === 'win32';
  const pick = (name: string, def = platformDefault(flagSpec(name), platform) as string) => {
    const v = given(name).trim();
    return v === 'none' ? '' : v || def;
  };
  const sep = win ? '\\' : '/';
  const dir = /^(.*)[\\/][^\\/]*$/.exec(subnetFile)?.[1] ?? '.';
  return {
    sourceVipFile: pick('source-vip-file', win ? `${dir}${sep}sourcevip.json` : ''),
    sourceVipCompatFiles: pick('source-vip-compat-files')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
    cniIpamDataDir: pick('cni-ipam-data-dir'),
    cniConfDir: pick('cni-conf-dir'),
    cniBinDir: pick('cni-bin-dir'),
  };
}

function flagSpec(name: string): (typeof FLAGS)[number] {
  const spec = FLAGS.find((f) => f.name === name);
  if (!spec) throw new Error(`internal: no flag ${name}`);
  return spec;
}

function nonEmpty(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') out[k] = v;
  return out;
}

// dotenv's own line pattern: whatever it does not match (besides blanks and comments) it would drop silently.
const DOTENV_LINE = /(?:^|^)\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?(?:$|$)/gm;

/** Read and parse a dotenv file; unreadable or unparseable -> ConfigError FLANNEL_ERR_ENV_FILE naming the file. */
function readEnvFile(path: string, readFile: (p: string) => string): Record<string, string> {
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    if (err instanceof FlannelError) throw err;
    throw new ConfigError(
      'FLANNEL_ERR_ENV_FILE',
      `cannot read env file ${path}: ${errorMessage(err)}; fix the path given by --flanneld-env-file (--env-file) / FLANNELD_ENV_FILE`,
      {
        path,
      },
    );
  }
  const normalized = text.replace(/\r\n?/g, '\n');
  const leftover = normalized.replace(DOTENV_LINE, (m) => m.replace(/[^\n]/g, ''));
  const lines = leftover.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line !== '' && !line.startsWith('#')) {
      throw new ConfigError('FLANNEL_ERR_ENV_FILE', `env file ${path} line ${i + 1} is not NAME=value: ${JSON.stringify(line.slice(0, 80))}; fix or remove the line`, {
        path,
        line: i + 1,
      });
    }
  }
  return dotenv.parse(normalized);
}

/** --etcd-password, or the first line of --etcd-password-file (which keeps it out of the process list). */
function etcdPassword(password: string, file: string, readFile: (p: string) => string): string {
  if (file === '') return password;
  if (password !== '') {
    throw new FlagError('FLANNEL_ERR_FLAG', 'flags -etcd-password and -etcd-password-file are both set: give only one (the file keeps the password off the command line)', {
      flag: 'etcd-password-file',
    });
  }
  let text: string;
  try {
    text = readFile(file);
  } catch (err) {
    if (err instanceof FlannelError) throw err;
    throw new ConfigError('FLANNEL_ERR_CONFIG', `cannot read the etcd password file ${file}: ${errorMessage(err)}; fix --etcd-password-file`, {
      flag: 'etcd-password-file',
      path: file,
    });
  }
  return withoutBom(text).replace(/\r?\n$/, '');
}

function requireIPv4(flag: string, value: string, emptyOk: boolean): void {
  if (value === '' && emptyOk) return;
  if (!isIPv4(value)) {
    throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${value}" for flag -${flag}: not an IPv4 address (e.g. 192.168.1.10)`, { flag, value });
  }
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${value}" for flag -${flag}: must be one of ${allowed.join(', ')}`, { flag, value });
}

type NodeIdentity = Pick<AgentConfig, 'nodeName' | 'podName' | 'podNamespace'>;

function nodeIdentity(env: Record<string, string>, kubeSubnetMgr: boolean): NodeIdentity {
  const nodeName = env['NODE_NAME'];
  const podName = env['POD_NAME'];
  const podNamespace = env['POD_NAMESPACE'];
  if (kubeSubnetMgr && nodeName === undefined && (podName === undefined || podNamespace === undefined)) {
    throw new ConfigError('FLANNEL_ERR_CONFIG', 'env variables POD_NAME and POD_NAMESPACE must be set', {
      hint: 'set NODE_NAME (e.g. from the downward API spec.nodeName), or POD_NAME and POD_NAMESPACE',
      missingEnv: 'POD_NAME POD_NAMESPACE',
    });
  }
  return { nodeName, podName, podNamespace };
}
