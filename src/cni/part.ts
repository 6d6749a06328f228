// The CNI config as one of the agent's parts (src/agent/part.ts). Its readiness contribution: what stops a
// pod from starting although the network is up, read from the first config in --cni-conf-dir
// (./readiness.ts), each problem with its NetworkUnavailable reason; /status's `cni`. And it keeps the
// agent's own conflist naming the network the agent runs (./conflist.ts rerenderedOwnConflist): after each
// settle of the network, and when the check finds it names another one.
import { join, resolve } from 'node:path';
import type { Network } from '../backends/backend.js';
import { errorMessage } from '../basics/errors.js';
import { writeFileAtomicSync } from '../basics/fs.js';
import { componentLogger } from '../basics/log.js';
import type { AgentPart, PartDeps, PodNetworkProblem } from '../agent/part.js';
import { cniConfigRenamedEvent } from '../node-events.js';
import { cniConfigFiles } from './conf-dir.js';
import { rerenderedOwnConflist } from './conflist.js';
import { checkCniReadiness, nodeCniReadinessFs, type CniProblem, type CniReadinessFs } from './readiness.js';
import { chooseCniDir, readContainerdCni, type ContainerdCni } from './containerd-config.js';

/** The NetworkUnavailable condition's reason per CNI check (CamelCase, as condition reasons are). */
const CNI_CONDITION_REASONS: Record<CniProblem['check'], string> = {
  'cni-conf-missing': 'CNIConfigMissing',
  'cni-conf-invalid': 'CNIConfigInvalid',
  'cni-conf-foreign': 'CNIConfigForeign',
  'cni-network-name': 'CNINetworkNameMismatch',
  'cni-subnet-file': 'CNISubnetFileMismatch',
  'cni-plugin-missing': 'CNIPluginMissing',
};

export interface CniPart extends AgentPart {
  /**
   * What stops a pod from starting although the network is up: the CNI config containerd loads first
   * (--cni-conf-dir) names another network, another subnet file, or a plugin missing from --cni-bin-dir.
   * [] while the check is off ("none") or before the network exists. Read at each call (a directory
   * listing and one small file), so /readyz follows an operator's fix at once.
   */
  cniProblems(): CniProblem[];
}

/**
 * `fs`: what the check reads (tests inject a table); default node:fs. `platform`: whose containerd defaults
 * fill what containerd's config leaves out.
 */
export function cniPart(deps: PartDeps, fs: CniReadinessFs = nodeCniReadinessFs, platform: NodeJS.Platform = process.platform): CniPart {
  const { config } = deps;
  const log = componentLogger(deps.log, 'agent');
  /** The findings about containerd's config of the last read: each is logged when it appears, not at every read. */
  let said = new Set<string>();

  /**
   * The CNI directories the check reads (./containerd-config.ts): a given --cni-conf-dir / --cni-bin-dir,
   * else containerd's from --containerd-config when that file is there (read at each call, bounded, as the
   * conf dir is), else the flags' defaults. A given flag containerd disagrees with is logged once with its
   * fix; an unreadable config is "unknown" (the flags stand), logged once.
   */
  const cniDirs = (): { confDir: string; binDir: string } => {
    const saying = new Set<string>();
    const sayOnce = (text: string, say: () => void) => {
      if (!said.has(text)) say();
      saying.add(text);
    };
    let containerd: ContainerdCni | undefined;
    try {
      containerd = readContainerdCni(config.containerdConfig, platform);
    } catch (err) {
      const error = errorMessage(err);
      sayOnce(error, () => log.warn("containerd's config cannot be read: the CNI check uses the agent's own flags", { path: config.containerdConfig, error }));
    }
    const conf = chooseCniDir('conf', { flag: '--cni-conf-dir', value: config.cniConfDir, given: config.cniDirsGiven.confDir }, containerd);
    const bin = chooseCniDir('bin', { flag: '--cni-bin-dir', value: config.cniBinDir, given: config.cniDirsGiven.binDir }, containerd);
    for (const [flag, choice, theirs] of [
      ['--cni-conf-dir', conf, containerd?.confDir],
      ['--cni-bin-dir', bin, containerd?.binDir],
    ] as const) {
      const w = choice.warning;
      if (w !== undefined)
        sayOnce(w.detail, () =>
          log.warn("the agent's CNI directory is not containerd's", { flag, dir: choice.dir, containerd: theirs, path: config.containerdConfig, detail: w.detail, fix: w.fix }),
        );
    }
    said = saying;
    return { confDir: conf.dir, binDir: bin.dir };
  };

  const cniProblems = (): CniProblem[] => {
    const network = deps.network();
    if (!network) return [];
    const { confDir, binDir } = cniDirs();
    if (!confDir) return [];
    return checkCniReadiness({ cniConfDir: confDir, cniBinDir: binDir, networkName: network.networkName, subnetFile: resolve(config.subnetFile) }, fs);
  };

  /**
   * The first config in --cni-conf-dir, when it is this agent's own (./conflist.ts rerenderedOwnConflist: one
   * cni-config rendered, by content; never a foreign one), is kept naming the network the agent runs and,
   * dual-stack, the node's subnets in host-local's ranges (sdnbridge does not read subnet.env). A
   * DaemonSet's init container renders it before the agent has adopted an existing network (net-conf's
   * `flannel.4096` for microsoft/SDN's `vxlan0`): rewritten here, atomically, logged and told as an
   * Event, readiness goes green without a restart of the pod.
   */
  const rerenderOwnConflist = (network: Network): void => {
    const dir = cniDirs().confDir;
    if (!dir) return;
    let path = dir;
    try {
      // Read through the check's seam (a regular file of at most 1 MiB), as the check reads it.
      const first = cniConfigFiles(dir, (d) => fs.readdir(d))[0];
      if (first === undefined) return;
      path = join(dir, first);
      const { subnet, ipv6Subnet } = network.lease;
      const next = rerenderedOwnConflist(fs.readFile(path), {
        networkName: network.networkName,
        configuredName: deps.netConf.backend.name,
        subnetFile: resolve(config.subnetFile),
        ...(ipv6Subnet !== undefined ? { dualStack: { subnet, ipv6Subnet } } : {}),
      });
      if (next === undefined) return;
      writeFileAtomicSync(path, next.text);
      if (next.reranged) log.info('rewrote the dual-stack CNI config for the new lease', { path, subnet, ipv6Subnet });
      if (next.renamedFrom !== undefined) {
        log.warn('rewrote the CNI config to name the HNS network this agent runs', { path, network: network.networkName, previous: next.renamedFrom });
        deps.events().record(cniConfigRenamedEvent(path, next.renamedFrom, network.networkName));
      }
    } catch (err) {
      log.warn('could not update the CNI config for the network this agent runs; run flanneld cni-config -o again', { path, error: errorMessage(err) });
    }
  };

  return {
    name: 'cni',
    cniProblems,
    problems: (): PodNetworkProblem[] => cniProblems().map((p) => ({ ...p, reason: CNI_CONDITION_REASONS[p.check] })),
    settled: (network) => Promise.resolve(rerenderOwnConflist(network)),
    repair(problems) {
      // The agent's own conflist written again with net-conf's name after the start (an installer re-run).
      const network = deps.network();
      if (network && problems.some((p) => p.check === 'cni-network-name')) rerenderOwnConflist(network);
      return Promise.resolve();
    },
    changed(now, before) {
      for (const p of now) log.warn('pods cannot start on this node: the CNI config does not fit this agent', { check: p.check, reason: p.reason, detail: p.detail, fix: p.fix });
      const { confDir } = cniDirs();
      if (confDir && now.length === 0 && (before === undefined || before.length > 0)) {
        log.info(before === undefined ? 'CNI config checked: pods can start' : 'the CNI config fits this agent again: pods can start', { confDir });
      }
    },
    status: (problems) => {
      const { confDir, binDir } = cniDirs();
      return confDir ? { cni: { confDir, binDir, problems: problems.map(({ check, detail, fix }) => ({ check, detail, fix })) } } : {};
    },
  };
}
