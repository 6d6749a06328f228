// subnet.env, the file the flannel CNI meta-plugin reads. Mirrors flannel pkg/subnet/subnet.go
// (WriteSubnetFile) and main.go (ReadCIDRFromSubnetFile); docs/compatibility.md §4 is the contract.
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { isIPv6 } from 'node:net';
import { parse as dotenvParse } from 'dotenv';
import IPCIDR from 'ip-cidr';
import { errorMessage, SubnetEnvError } from '../basics/errors.js';
import { formatCidr, network, nthAddress, parseCidr } from '../basics/ip4.js';
import { formatIp6, normalizeCidr6 } from '../basics/ip6.js';
import { nodeSubnetEnvFs } from '../basics/fs.js';
import type { SubnetEnvFs } from '../basics/fs.js';
import { retryWithBackoff, systemClock, type Clock } from '../basics/clock.js';

export interface SubnetEnvValues {
  /** Cluster Network (IPv4 CIDR). */
  network: string;
  /** The own lease's IPv4 subnet (network address form); written as its first address + 1. */
  subnet: string;
  mtu: number;
  ipMasq: boolean;
  /** Both or neither: the IPv6 cluster network and the own IPv6 lease subnet. */
  ipv6Network?: string;
  ipv6Subnet?: string;
}

function envError(message: string, context: Record<string, string | number | undefined>, cause?: unknown): SubnetEnvError {
  return new SubnetEnvError('FLANNEL_ERR_SUBNET_ENV', message, context, cause === undefined ? undefined : { cause });
}

// Not basics/ip6's parseCidr6: subnet.env is byte-exact, and on every hex spelling the two agree
// (test/property/subnet-env.property.test.ts). Hex is all flannel writes and all the agent has (its IPv6
// CIDRs come from net-conf, Node podCIDRs and etcd keys through basics/ip6). A zone ID (`fe80::1%eth0/64`:
// Go's net.ParseCIDR refuses it) and a dotted IPv4 tail (`::ffff:10.0.0.0/120`: ip-cidr would write some
// of them unmasked) are refused here.
function parseCidr6(text: string, what: string): { start: bigint; prefix: number } {
  const slash = text.indexOf('/');
  const addr = slash < 0 ? '' : text.slice(0, slash);
  const p = slash < 0 ? '' : text.slice(slash + 1);
  if (!isIPv6(addr) || /[%.]/.test(addr) || !/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 128 || !IPCIDR.isValidCIDR(text)) {
    throw envError(`${what} ${JSON.stringify(text)} is not an IPv6 CIDR`, { [what]: text });
  }
  return { start: new IPCIDR(text).start<bigint>({ type: 'bigInteger' }), prefix: Number(p) };
}

function ipv4(text: string, what: string): { net: string; first: string } {
  const n = parseCidr(text);
  if (n === undefined) throw envError(`${what} ${JSON.stringify(text)} is not an IPv4 CIDR`, { [what]: text });
  const masked = network(n);
  if (n.prefix > 31) throw envError(`${what} ${text} has no host addresses`, { [what]: text });
  return { net: formatCidr(masked), first: `${nthAddress(masked, 1)}/${n.prefix}` };
}

/** The exact bytes of subnet.env (LF endings, no quotes, upstream key order). */
export function encodeSubnetEnv(v: SubnetEnvValues): string {
  if (!Number.isInteger(v.mtu) || v.mtu <= 0) throw envError(`MTU ${String(v.mtu)} is not a positive integer`, { mtu: v.mtu });
  const lines: string[] = [];
  lines.push(`FLANNEL_NETWORK=${ipv4(v.network, 'network').net}`);
  lines.push(`FLANNEL_SUBNET=${ipv4(v.subnet, 'subnet').first}`);
  if ((v.ipv6Network === undefined) !== (v.ipv6Subnet === undefined)) {
    throw envError('ipv6Network and ipv6Subnet must be given together', { ipv6Network: v.ipv6Network, ipv6Subnet: v.ipv6Subnet });
  }
  if (v.ipv6Network !== undefined && v.ipv6Subnet !== undefined) {
    const n6 = parseCidr6(v.ipv6Network, 'ipv6Network');
    const s6 = parseCidr6(v.ipv6Subnet, 'ipv6Subnet');
    if (s6.prefix > 127) throw envError(`ipv6Subnet ${v.ipv6Subnet} has no host addresses`, { ipv6Subnet: v.ipv6Subnet });
    lines.push(`FLANNEL_IPV6_NETWORK=${formatIp6(n6.start)}/${n6.prefix}`);
    lines.push(`FLANNEL_IPV6_SUBNET=${formatIp6(s6.start + 1n)}/${s6.prefix}`);
  }
  lines.push(`FLANNEL_MTU=${v.mtu}`);
  lines.push(`FLANNEL_IPMASQ=${v.ipMasq ? 'true' : 'false'}`);
  return lines.join('\n') + '\n';
}

const LINE = /^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*=/;

/** Throws FLANNEL_ERR_SUBNET_ENV when `text` is not a dotenv file (binary, or lines without `KEY=`). */
export function checkSubnetEnvSyntax(text: string, path = 'subnet.env'): void {
  if (text.includes('\0')) throw envError(`${path} is not a text file`, { path });
  const lines = text.split(/\r?\n|\r/);
  lines.forEach((line, i) => {
    const t = line.trim();
    if (t === '' || t.startsWith('#') || LINE.test(line)) return;
    throw envError(`${path} line ${i + 1} is not KEY=VALUE`, { path, line: i + 1 });
  });
}

/** Parse subnet.env (CRLF tolerated; a leading UTF-8 BOM too, as dotenv's line pattern takes U+FEFF for \s). */
export function parseSubnetEnv(text: string): Record<string, string> {
  return dotenvParse(text.replace(/\r\n?/g, '\n'));
}

/** The previous own subnet: FLANNEL_SUBNET (`10.244.3.1/24`) as its network CIDR (`10.244.3.0/24`). */
export function previousSubnetFromEnv(text: string): string | undefined {
  const v = parseSubnetEnv(text)['FLANNEL_SUBNET']?.trim();
  if (v === undefined) return undefined;
  const n = parseCidr(v);
  return n === undefined ? undefined : formatCidr(network(n));
}

/** The previous own IPv6 subnet: FLANNEL_IPV6_SUBNET (`2001:cafe:42::1/64`) as its network CIDR (`2001:cafe:42::/64`). */
export function previousIPv6SubnetFromEnv(text: string): string | undefined {
  const v = parseSubnetEnv(text)['FLANNEL_IPV6_SUBNET']?.trim();
  return v === undefined ? undefined : normalizeCidr6(v);
}

/**
 * How long a rename refused as "in use" is retried. On Windows, MoveFileEx over a file that another
 * process holds open without FILE_SHARE_DELETE fails (EPERM/EACCES from libuv, EBUSY on some file systems);
 * readers such as the CNI plugin or an antivirus scan hold subnet.env only for moments. Upstream avoids
 * the rename on Windows and writes in place (flannel pkg/subnet/subnetfile_windows.go, citing renameio's
 * README "Windows support"), which a reader can see half-written; we keep the rename and wait instead.
 * Delays 25, 50, 100, 200, 200... ms for at most 2 s: a rename still refused after that is reported.
 */
export const SUBNET_ENV_RENAME_RETRY = { backoffBaseMs: 25, backoffCapMs: 200, timeoutMs: 2_000 } as const;
const RENAME_IN_USE = new Set(['EPERM', 'EACCES', 'EBUSY']);

export interface WriteSubnetEnvOptions {
  fs?: SubnetEnvFs;
  /** Paces the rename retries (systemClock by default). */
  clock?: Clock;
  signal?: AbortSignal;
}

/**
 * Atomically replace `path` with `contents`: mkdir -p the parent, write a temp file in the same
 * directory, fsync it, rename it over the target (retried while the target is in use, see
 * SUBNET_ENV_RENAME_RETRY). On failure the old file is untouched, the temp file is removed, and a
 * FLANNEL_ERR_SUBNET_ENV error names the path.
 */
export async function writeSubnetEnv(path: string, contents: string, o: WriteSubnetEnvOptions = {}): Promise<void> {
  const fs = o.fs ?? nodeSubnetEnvFs;
  let renameAttempts = 0;
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let stage = 'create directory';
  let created = false;
  try {
    await fs.mkdir(dir, { recursive: true });
    stage = 'create temp file';
    const fh = await fs.open(tmp, 'wx', 0o644);
    created = true;
    try {
      stage = 'write';
      await fh.writeFile(contents, 'utf8');
      stage = 'fsync';
      await fh.sync();
    } finally {
      await fh.close();
    }
    stage = 'rename';
    await retryWithBackoff(
      () => {
        renameAttempts++;
        return fs.rename(tmp, path);
      },
      { ...SUBNET_ENV_RENAME_RETRY, clock: o.clock ?? systemClock, retryable: (e) => RENAME_IN_USE.has(errnoOf(e) ?? ''), onRetry: () => undefined },
      o.signal ?? new AbortController().signal,
    );
  } catch (err) {
    if (created) await fs.unlink(tmp).catch(() => undefined);
    const code = errnoOf(err);
    const inUse = stage === 'rename' && RENAME_IN_USE.has(code ?? '');
    const hint = inUse ? `; still refused after ${renameAttempts} attempts: close the program holding it open and restart flanneld` : '';
    throw envError(`cannot write subnet file ${path} (${stage}): ${errorMessage(err)}${hint}`, { path, stage, errno: code, ...(inUse ? { attempts: renameAttempts } : {}) }, err);
  }
}

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** Read subnet.env: its text, `undefined` when it does not exist; unreadable or malformed -> FLANNEL_ERR_SUBNET_ENV. */
export async function readSubnetEnv(path: string, fs: SubnetEnvFs = nodeSubnetEnvFs): Promise<string | undefined> {
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'ENOENT') return undefined;
    throw envError(`cannot read subnet file ${path}: ${errorMessage(err)}`, { path, errno: code }, err);
  }
  checkSubnetEnvSyntax(text, path);
  return text;
}
