// flanneld's flag table and a Go `flag`-style command line parser.
// Mirrors the flag registrations of flannel main.go (init) plus this agent's own options.
// Pure: no process.env, no I/O. ./parse.ts turns the result into an AgentConfig.
import { FlagError } from '../basics/errors.js';

export type FlagKind = 'bool' | 'string' | 'int' | 'stringList';
export type FlagValue = boolean | string | number | string[];

export interface FlagSpec {
  /** Name without dashes, e.g. `kube-subnet-mgr`. */
  readonly name: string;
  readonly kind: FlagKind;
  /** The default everywhere but Windows. */
  readonly default: FlagValue;
  /** The default on Windows, when it differs; the usage text shows the running platform's only. */
  readonly windowsDefault?: FlagValue;
  readonly help: string;
  /** Other spellings (e.g. `h` for `help`). */
  readonly aliases?: readonly string[];
  /** Accepted for compatibility with Linux flanneld and ignored on Windows. */
  readonly ignored?: boolean;
  /**
   * For the Windows test harness only (test/support/windows.ts runs the built agent under Wine against
   * stand-in DLLs): accepted like any flag, left out of `--help` and of docs/flags.md; docs/testing.md
   * ("The Windows build under Wine") is the one place that describes it.
   */
  readonly harness?: boolean;
  /** Not read from `FLANNELD_<NAME>` (help, version). */
  readonly noEnv?: boolean;
  /** Placeholder shown in the usage text (`FILE`, `IP`, ...). */
  readonly valueName?: string;
}

const IGNORED = ' (accepted and ignored on Windows)';

/**
 * Environment variables upstream's kube-flannel.yml sets for flannel pkg/subnet/kube/kube.go that mean
 * nothing to this agent, accepted and ignored here (never read, never checked): EVENT_QUEUE_DEPTH sizes
 * the channel between flannel's informer and its lease watcher (here watch events update the desired set
 * directly: there is no queue to size); CONT_WHEN_CACHE_NOT_READY lets flanneld go on when the informer's
 * first sync times out (here a slow first node list never stops the agent: it keeps retrying, and the
 * dataplane is written once the list is complete).
 */
const IGNORED_UPSTREAM_ENV = ['EVENT_QUEUE_DEPTH', 'CONT_WHEN_CACHE_NOT_READY'] as const;

/** Every flag flanneld-windows accepts, in the order the usage text lists them. */
export const FLAGS: readonly FlagSpec[] = [
  // --- flanneld (main.go) ---
  { name: 'etcd-endpoints', kind: 'string', default: 'http://127.0.0.1:4001,http://127.0.0.1:2379', help: 'a comma-delimited list of etcd endpoints', valueName: 'URLS' },
  { name: 'etcd-prefix', kind: 'string', default: '/coreos.com/network', help: 'etcd prefix' },
  { name: 'etcd-keyfile', kind: 'string', default: '', help: 'SSL key file used to secure etcd communication', valueName: 'FILE' },
  { name: 'etcd-certfile', kind: 'string', default: '', help: 'SSL certification file used to secure etcd communication', valueName: 'FILE' },
  { name: 'etcd-cafile', kind: 'string', default: '', help: 'SSL Certificate Authority file used to secure etcd communication', valueName: 'FILE' },
  { name: 'etcd-username', kind: 'string', default: '', help: 'username for BasicAuth to etcd' },
  {
    name: 'etcd-password',
    kind: 'string',
    default: '',
    help: 'password for BasicAuth to etcd (visible in the process list: prefer --etcd-password-file or FLANNELD_ETCD_PASSWORD)',
  },
  { name: 'etcd-password-file', kind: 'string', default: '', help: 'read the etcd BasicAuth password from this file (one line; a trailing newline is dropped)', valueName: 'FILE' },
  {
    name: 'iface',
    kind: 'stringList',
    default: [],
    help: 'interface to use (IP or name) for inter-host communication. Can be specified multiple times to check each option in order. Returns the first match found.',
    valueName: 'IP|NAME',
  },
  {
    name: 'iface-regex',
    kind: 'stringList',
    default: [],
    help: 'regex expression to match the first interface to use (IP or name) for inter-host communication. Can be specified multiple times to check each regex in order. Returns the first match found. Regexes are checked after specific interfaces specified by the iface option have already been checked.',
    valueName: 'REGEX',
  },
  {
    name: 'iface-can-reach',
    kind: 'string',
    default: '',
    help: 'detect the interface by the route to this IP (not supported on Windows: use --iface or --iface-regex)',
    valueName: 'IP',
  },
  {
    name: 'subnet-file',
    kind: 'string',
    default: '/run/flannel/subnet.env',
    windowsDefault: 'C:\\run\\flannel\\subnet.env',
    help: 'filename where env variables (subnet, MTU, ... ) will be written to',
    valueName: 'FILE',
  },
  { name: 'public-ip', kind: 'string', default: '', help: 'IP accessible by other nodes for inter-host communication', valueName: 'IP' },
  { name: 'public-ipv6', kind: 'string', default: '', help: 'IPv6 accessible by other nodes for inter-host communication (dual-stack host-gw)', valueName: 'IP' },
  {
    name: 'ipv4-only',
    kind: 'bool',
    default: false,
    help: "run this node IPv4-only in a dual-stack cluster (net-conf EnableIPv6): pods get IPv4 only, peers' IPv6 halves are ignored; the way to add a Windows vxlan node, which cannot run IPv6",
  },
  {
    name: 'network-policy',
    kind: 'bool',
    default: false,
    help: "enforce Kubernetes NetworkPolicy on this node's pods with HNS endpoint ACLs (needs --kube-subnet-mgr and list/watch on networkpolicies, pods and namespaces; docs/network-policy.md)",
  },
  { name: 'subnet-lease-renew-margin', kind: 'int', default: 60, help: 'subnet lease renewal margin, in minutes, ranging from 1 to 1439', valueName: 'MINUTES' },
  {
    name: 'ip-masq',
    kind: 'bool',
    default: false,
    help: 'setup IP masquerade for traffic destined outside of overlay network (on Windows: sets FLANNEL_IPMASQ=true; the CNI does the NAT)',
  },
  { name: 'kube-subnet-mgr', kind: 'bool', default: false, help: 'contact the Kubernetes API for subnet assignment instead of etcd.' },
  { name: 'kube-api-url', kind: 'string', default: '', help: 'Kubernetes API server URL. Does not need to be specified if flannel is running in a pod.', valueName: 'URL' },
  {
    name: 'kube-annotation-prefix',
    kind: 'string',
    default: 'flannel.alpha.coreos.com',
    help: 'Kubernetes annotation prefix. Can contain single slash "/", otherwise it will be appended at the end.',
    valueName: 'PREFIX',
  },
  { name: 'kubeconfig-file', kind: 'string', default: '', help: 'kubeconfig file location. Does not need to be specified if flannel is running in a pod.', valueName: 'FILE' },
  { name: 'healthz-ip', kind: 'string', default: '0.0.0.0', help: 'the IP address for healthz server to listen', valueName: 'IP' },
  { name: 'healthz-port', kind: 'int', default: 0, help: 'the port for healthz server to listen(0 to disable)', valueName: 'PORT' },
  {
    name: 'healthz-stale-after',
    kind: 'int',
    default: 300,
    help: '/healthz fails (503) once no reconcile pass has succeeded for this many seconds, so a wedged agent is restarted (0: never)',
    valueName: 'SECONDS',
  },
  { name: 'iptables-resync', kind: 'int', default: 5, help: 'resync period for iptables rules, in seconds' + IGNORED, valueName: 'SECONDS', ignored: true },
  { name: 'iptables-forward-rules', kind: 'bool', default: true, help: 'add default accept rules to FORWARD chain in iptables' + IGNORED, ignored: true },
  { name: 'ip-masq-fully-random-disable', kind: 'bool', default: false, help: 'disable the --random-fully flag of the masquerade rules' + IGNORED, ignored: true },
  { name: 'ip-blackhole-route', kind: 'bool', default: false, help: 'add a blackhole route for the local podCIDR' + IGNORED, ignored: true },
  {
    name: 'net-config-path',
    kind: 'string',
    default: '/etc/kube-flannel/net-conf.json',
    windowsDefault: 'C:\\etc\\kube-flannel\\net-conf.json',
    help: 'path to the network configuration file',
    valueName: 'FILE',
  },
  { name: 'set-node-network-unavailable', kind: 'bool', default: true, help: 'set NodeNetworkUnavailable after ready' },
  { name: 'v', kind: 'int', default: 0, help: 'number for the log level verbosity (>= 2 turns on debug logging unless --log-level is given)', valueName: 'LEVEL' },
  { name: 'version', kind: 'bool', default: false, help: 'print version and exit', noEnv: true },
  // --- flanneld-windows ---
  {
    name: 'dataplane',
    kind: 'string',
    default: '',
    windowsDefault: 'windows',
    help: 'dataplane to program: windows (HNS and the IP route table; needs Windows) or simulated (in-memory HNS, any platform); required except on Windows',
    valueName: 'windows|simulated',
  },
  {
    name: 'node-wait-timeout',
    kind: 'int',
    default: 300,
    help: 'seconds to wait for the own Node object and its podCIDR before giving up (kube subnet manager)',
    valueName: 'SECONDS',
  },
  {
    name: 'hns-call-timeout',
    kind: 'int',
    default: 120,
    help: 'seconds to wait for one HNS call (HNSCall, Hcn*) before it fails and the reconcile loop retries (0: wait forever)',
    valueName: 'SECONDS',
  },
  {
    name: 'hns-policy-batch-size',
    kind: 'int',
    default: 200,
    help: 'vxlan: RemoteSubnetRoute policies per HcnModifyNetwork call (1..10000); 1 sends one policy per call as upstream flannel does, for a node whose HNS mishandles several policies in one call',
    valueName: 'N',
  },
  {
    name: 'restart-service-on-hns-restart',
    kind: 'string',
    default: '',
    help: "restart this Windows service (e.g. kubeproxy) through the service control manager once the network is re-applied after an HNS restart and HNS has restored kube-proxy's load balancers (default: none)",
    valueName: 'SERVICE',
  },
  {
    // HNS restores kube-proxy's load balancers itself after it restarts (kubernetes#139519); one that never
    // comes back is made again only by a restarted kube-proxy (kubernetes#135802). No source says how long the
    // restore takes: 120 s is four kube-proxy sync periods (its --sync-period default, 30 s).
    name: 'restart-service-lb-wait',
    kind: 'int',
    default: 120,
    help: "with --restart-service-on-hns-restart: seconds to wait for HNS to restore kube-proxy's load balancers before restarting the service anyway",
    valueName: 'SECONDS',
  },
  {
    name: 'win32-dll-dir',
    kind: 'string',
    default: '',
    help: 'directory to load vmcompute.dll, computenetwork.dll and iphlpapi.dll from (default: the system directory)',
    valueName: 'DIR',
    harness: true,
  },
  { name: 'dataplane-state', kind: 'string', default: '', help: 'JSON file that persists the simulated dataplane across restarts (empty: in memory only)', valueName: 'FILE' },
  { name: 'log-level', kind: 'string', default: 'info', help: 'log level: error, warn, info or debug', valueName: 'LEVEL' },
  { name: 'log-format', kind: 'string', default: 'text', help: 'log format: text or json', valueName: 'FORMAT' },
  { name: 'log-file', kind: 'string', default: '', help: 'also write the log to this size-rotated file', valueName: 'FILE' },
  {
    name: 'source-vip-file',
    kind: 'string',
    default: '',
    windowsDefault: 'C:\\run\\flannel\\sourcevip.json',
    help: 'vxlan: where to record the kube-proxy source VIP the agent reserves (empty: sourcevip.json beside --subnet-file on Windows, off elsewhere; "none" disables the reservation)',
    valueName: 'FILE',
  },
  {
    name: 'source-vip-compat-files',
    kind: 'string',
    default: '',
    windowsDefault: 'C:\\k\\sourceVip.json,C:\\sourcevip\\sourceVip.json',
    help: 'vxlan: comma-separated sourceVip.json paths the familiar kube-proxy scripts read, written in host-local format ("none" for none)',
    valueName: 'FILES',
  },
  {
    name: 'cni-ipam-data-dir',
    kind: 'string',
    default: '',
    windowsDefault: 'C:\\var\\lib\\cni\\networks',
    help: 'host-local IPAM data directory in which the vxlan source VIP or the host-gw bridge endpoint address is reserved so no pod gets it ("none" for none)',
    valueName: 'DIR',
  },
  {
    name: 'cni-conf-dir',
    kind: 'string',
    default: '',
    windowsDefault: 'C:\\etc\\cni\\net.d',
    help: 'containerd\'s CNI conf_dir: ready only while the first config in it names this agent\'s network, subnet file and installed plugins ("none" for no check)',
    valueName: 'DIR',
  },
  {
    name: 'cni-bin-dir',
    kind: 'string',
    default: '',
    windowsDefault: 'C:\\opt\\cni\\bin',
    help: "containerd's CNI bin_dir, where the plugins that config names must be",
    valueName: 'DIR',
  },
  {
    name: 'containerd-config',
    kind: 'string',
    default: '',
    windowsDefault: 'C:\\Program Files\\containerd\\config.toml',
    help: "containerd's config.toml, read (never written) when it is there: its CNI conf_dir and bin_dirs[0] (else bin_dir) stand in for --cni-conf-dir and --cni-bin-dir when those are not given, and a given one that differs is warned about",
    valueName: 'FILE',
  },
  {
    name: 'env-file',
    kind: 'string',
    default: '',
    help: 'read FLANNELD_* (and NODE_NAME, ...) variables from this dotenv file; real environment and flags win. Prefer the name --flanneld-env-file: Node itself reads --env-file too, even after the script (flanneld.exe, node main.js), and reports a missing file as "FILE: not found"',
    aliases: ['flanneld-env-file'],
    valueName: 'FILE',
  },
  { name: 'help', kind: 'bool', default: false, help: 'print this message', aliases: ['h'], noEnv: true },
];

const BY_NAME: ReadonlyMap<string, FlagSpec> = new Map(FLAGS.flatMap((f) => [f.name, ...(f.aliases ?? [])].map((n) => [n, f] as const)));

/** The spec of a flag by name or alias (without dashes). */
export function lookupFlag(name: string, table: readonly FlagSpec[] = FLAGS): FlagSpec | undefined {
  if (table === FLAGS) return BY_NAME.get(name);
  return table.find((f) => f.name === name || (f.aliases ?? []).includes(name));
}

/** `kube-subnet-mgr` -> `FLANNELD_KUBE_SUBNET_MGR` (upper case; `-` and `.` become `_`). */
export function envVarName(flagName: string): string {
  return 'FLANNELD_' + flagName.toUpperCase().replace(/[-.]/g, '_');
}

const TRUE_WORDS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_WORDS = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Go strconv.ParseBool; undefined when the text is not a boolean. */
function parseGoBool(s: string): boolean | undefined {
  if (TRUE_WORDS.has(s)) return true;
  if (FALSE_WORDS.has(s)) return false;
  return undefined;
}

/** Go strconv.ParseInt(s, 0, 64) for the values flags take: decimal, 0x hex, 0o/0 octal, 0b binary, `_` separators. */
function parseGoInt(s: string): number | undefined {
  const m = /^([+-]?)(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9_]*)$/.exec(s);
  if (!m) return undefined;
  const sign = m[1] === '-' ? -1 : 1;
  const body = m[2];
  if (body.includes('__') || body.endsWith('_')) return undefined;
  const digits = body.replace(/_/g, '');
  let n: number;
  if (/^0[xXoObB]/.test(digits)) n = Number(digits);
  else if (digits.length > 1 && digits.startsWith('0')) n = parseInt(digits.slice(1), 8);
  else n = Number(digits);
  if (!Number.isSafeInteger(n)) return undefined;
  return sign * n;
}

/**
 * Apply one textual value to a flag (Go flag.Value.Set). `source` names where the value came from in
 * error messages: `flag -healthz-port` or `environment variable FLANNELD_HEALTHZ_PORT (flag -healthz-port)`.
 */
export function applyFlagValue(spec: FlagSpec, current: FlagValue | undefined, raw: string, source = `flag -${spec.name}`): FlagValue {
  switch (spec.kind) {
    case 'bool': {
      const b = parseGoBool(raw);
      if (b === undefined) {
        throw new FlagError('FLANNEL_ERR_FLAG', `invalid boolean value "${raw}" for ${source}: parse error (use true or false)`, { flag: spec.name, value: raw, source });
      }
      return b;
    }
    case 'int': {
      const n = parseGoInt(raw);
      if (n === undefined) {
        throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${raw}" for ${source}: parse error (expected an integer)`, { flag: spec.name, value: raw, source });
      }
      return n;
    }
    case 'string':
      return raw;
    case 'stringList':
      return [...(Array.isArray(current) ? current : []), raw];
  }
}

export interface ParsedFlags {
  /** Values of the flags given on the command line only (by canonical name). */
  readonly values: ReadonlyMap<string, FlagValue>;
  /** `--help`/`-h` was given (parsing stops there, as Go's flag package does). */
  readonly help: boolean;
}

/**
 * Parse argv (without the program name) the way Go's `flag` package does: `-x` or `--x`, `=value` or the
 * next argument as value; booleans take only `=value` and never consume the next argument; `--` ends
 * the flags. Unlike Go, a positional argument is an error (flanneld takes none).
 */
export function parseFlags(argv: readonly string[], table: readonly FlagSpec[] = FLAGS): ParsedFlags {
  const values = new Map<string, FlagValue>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      if (i + 1 < argv.length) throw positional(argv[i + 1]);
      break;
    }
    if (arg.length < 2 || !arg.startsWith('-')) throw positional(arg);
    const body = arg.startsWith('--') ? arg.slice(2) : arg.slice(1);
    if (body === '' || body.startsWith('-') || body.startsWith('=')) {
      throw new FlagError('FLANNEL_ERR_FLAG', `bad flag syntax: ${arg}; write flags as --name=value or --name value`, { arg });
    }
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    const spec = lookupFlag(name, table);
    if (!spec) {
      throw new FlagError('FLANNEL_ERR_FLAG', `flag provided but not defined: -${name}; run with --help to list the flags`, { flag: name });
    }
    if (spec.name === 'help') {
      if (eq >= 0 && applyFlagValue(spec, undefined, body.slice(eq + 1)) === false) continue;
      return { values, help: true };
    }
    let raw: string;
    if (eq >= 0) {
      raw = body.slice(eq + 1);
    } else if (spec.kind === 'bool') {
      raw = 'true';
    } else {
      if (i + 1 >= argv.length) {
        throw new FlagError('FLANNEL_ERR_FLAG', `flag needs an argument: -${name}`, { flag: spec.name });
      }
      raw = argv[++i]!;
    }
    values.set(spec.name, applyFlagValue(spec, values.get(spec.name), raw));
  }
  return { values, help: false };
}

function positional(arg: string): FlagError {
  return new FlagError('FLANNEL_ERR_FLAG', `unexpected argument "${arg}": flanneld takes only flags (did you forget a -- before a flag name, or quote a value?)`, { arg });
}

/** The default a flag has on `platform`. */
export function platformDefault(spec: FlagSpec, platform: NodeJS.Platform): FlagValue {
  return platform === 'win32' && spec.windowsDefault !== undefined ? spec.windowsDefault : spec.default;
}

function formatDefault(spec: FlagSpec, platform: NodeJS.Platform): string {
  const d = platformDefault(spec, platform);
  if (Array.isArray(d)) return d.length === 0 ? '' : ` (default ${JSON.stringify(d)})`;
  if (typeof d === 'boolean') return d ? ' (default true)' : '';
  if (typeof d === 'number') return d === 0 ? '' : ` (default ${d})`;
  return d === '' ? '' : ` (default "${d}")`;
}

/**
 * Usage text in the shape of Go's flag.PrintDefaults, listing every flag but the harness's with its help
 * and the default it has on `platform` (one default per flag: a Windows operator never reads a Linux path).
 */
export function renderUsage(program = 'flanneld', table: readonly FlagSpec[] = FLAGS, platform: NodeJS.Platform = process.platform): string {
  const lines = [`Usage: ${program} [OPTION]...`, ''];
  for (const spec of table) {
    if (spec.harness) continue;
    const names = [...(spec.aliases ?? []).map((a) => `-${a}`), `--${spec.name}`].join(', ');
    let head = `  ${names}`;
    if (spec.kind !== 'bool') head += ` ${spec.valueName ?? spec.kind.replace('stringList', 'string')}`;
    if (spec.kind === 'stringList') head += ' (repeatable)';
    lines.push(head);
    lines.push(`        ${spec.help}${formatDefault(spec, platform)}`);
    if (!spec.noEnv) lines.push(`        env: ${envVarName(spec.name)}`);
  }
  lines.push('');
  lines.push('Environment: NODE_NAME (else POD_NAME and POD_NAMESPACE).');
  lines.push(`${IGNORED_UPSTREAM_ENV.join(' and ')} (set by upstream's manifests) are accepted and ignored.`);
  return lines.join('\n') + '\n';
}
