// subnet.env as the agent keeps it for the flannel CNI plugin (flannel main.go WriteSubnetFile, once the
// backend's network is registered; ../subnet/subnet-env.ts holds the bytes and the atomic write): the
// network's subnets and current MTU, written again whenever they change (a rebuild's MTU, a new lease's
// subnets), and retried after a rebuild that could not write it. The previous one says what this node had.
import { backoffDelay, pause, type Clock } from '../basics/clock.js';
import { errorMessage, FlannelError } from '../basics/errors.js';
import type { SubnetEnvFs } from '../basics/fs.js';
import type { Logger } from '../basics/log.js';
import type { Network } from '../backends/backend.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';
import { encodeSubnetEnv, previousIPv6SubnetFromEnv, previousSubnetFromEnv, readSubnetEnv, writeSubnetEnv } from '../subnet/subnet-env.js';

export interface SubnetEnvFileOptions {
  /** --subnet-file. */
  path: string;
  /** --ip-masq. */
  ipMasq: boolean;
  netConf: NetworkConfig;
  /** The file system it is read and written through; default node:fs. */
  fs?: SubnetEnvFs;
  clock: Clock;
  log: Logger;
}

export class SubnetEnvFile {
  /** The bytes it was last written with. */
  private written: string | undefined;
  /** The retry after a rebuild, while one runs. */
  private retry: Promise<void> | undefined;

  constructor(private readonly opts: SubnetEnvFileOptions) {}

  /** Whether the file lacks what `network` needs (its subnets, its current MTU). */
  differs(network: Network): boolean {
    return this.text(network) !== this.written;
  }

  /** Write it for the network's subnets and current MTU (again after a rebuild changed the MTU). */
  async write(network: Network): Promise<void> {
    const { path, fs, clock, log } = this.opts;
    const text = this.text(network);
    await writeSubnetEnv(path, text, { fs, clock });
    this.written = text;
    log.info('wrote subnet.env', { path, subnet: network.lease.subnet, mtu: network.mtu });
  }

  /**
   * Write it for the current network's MTU, retried (1 s doubling to 30 s) until written: a rebuild that
   * changed the MTU while the directory was read-only or full must not leave the old MTU there. One retry
   * loop at a time; each attempt writes what `current` holds then (a later lease round may have replaced
   * the network that started the loop, and written subnet.env for its own).
   */
  keep(current: () => Network | undefined, signal: AbortSignal): void {
    if (this.retry) return;
    const { clock, log } = this.opts;
    this.retry = (async () => {
      for (let attempt = 0; ; attempt++) {
        const network = current();
        if (signal.aborted || network === undefined || !this.differs(network)) return;
        try {
          await this.write(network);
        } catch (err) {
          const delayMs = backoffDelay(attempt, 1000, 30_000);
          log.warn('cannot write subnet.env after the network was rebuilt; retrying', {
            path: this.opts.path,
            mtu: network.mtu,
            delayMs,
            error: errorMessage(err),
            ...(err instanceof FlannelError ? { code: err.code } : {}),
          });
          if (!(await pause(clock, delayMs, signal))) break;
        }
      }
    })().finally(() => (this.retry = undefined));
  }

  /** The previous subnet.env tells what this node had (the etcd manager prefers it); a bad one is only logged. */
  async previous(): Promise<{ subnet?: string; ipv6Subnet?: string }> {
    const { path, log } = this.opts;
    try {
      const previous = await readSubnetEnv(path, this.opts.fs);
      if (previous === undefined) return {};
      const subnet = previousSubnetFromEnv(previous);
      const ipv6Subnet = previousIPv6SubnetFromEnv(previous);
      log.info('found previous subnet.env', { path, subnet, ...(ipv6Subnet !== undefined ? { ipv6Subnet } : {}) });
      return { subnet, ipv6Subnet };
    } catch (err) {
      log.warn('ignoring unreadable previous subnet.env; it will be rewritten', { path, error: errorMessage(err) });
      return {};
    }
  }

  /**
   * The file's bytes for the network: its subnets and current MTU; FLANNEL_IPV6_NETWORK /
   * FLANNEL_IPV6_SUBNET only when IPv6 is on (upstream WriteSubnetFile).
   */
  private text(network: Network): string {
    const { netConf } = this.opts;
    const v6 = netConf.enableIPv6 && network.lease.ipv6Subnet !== undefined ? { ipv6Network: netConf.ipv6Network, ipv6Subnet: network.lease.ipv6Subnet } : {};
    return encodeSubnetEnv({ network: netConf.network, subnet: network.lease.subnet, mtu: network.mtu, ipMasq: this.opts.ipMasq, ...v6 });
  }
}
