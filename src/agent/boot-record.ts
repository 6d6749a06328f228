// The boot record beside subnet.env (../host/boot.ts) as the agent keeps it: whether this start follows a
// reboot (non-persistent HNS networks are gone then), and the HNS network pods use (`flanneld cni-config`
// reads its name there).
import type { Network } from '../backends/backend.js';
import type { Clock } from '../basics/clock.js';
import { errorMessage } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import type { HnsClient } from '../hns/client.js';
import { bootRecordPath, checkBoot, recordBootNetwork, type StartKind } from '../host/boot.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';

/** Record the boot time beside subnet.env and say whether this start follows a reboot; undefined when unknown. */
export function recordBoot(subnetFile: string, bootTimeMs: number, clock: Clock, log: Logger): StartKind | undefined {
  const path = bootRecordPath(subnetFile);
  try {
    const check = checkBoot(path, bootTimeMs, clock.now());
    const what =
      check.kind === 'reboot'
        ? 'this start follows a reboot: non-persistent HNS networks are gone and will be recreated'
        : check.kind === 'restart'
          ? 'this start is a restart within the same boot: a matching HNS network is reused, never deleted'
          : 'first start on this host (no boot record yet)';
    log.info(what, { startKind: check.kind, bootTime: check.current.bootTime, previousBootTime: check.previous?.bootTime, starts: check.current.starts, path });
    return check.kind;
  } catch (err) {
    log.warn('could not record the boot time; reboot detection is off for this start', { path, error: errorMessage(err) });
    return undefined;
  }
}

/**
 * Keep the HNS network this agent runs (created or adopted) in the boot record, where whoever renders the
 * CNI config finds the name pods must use (`flanneld cni-config` reads it).
 */
export async function recordNetwork(subnetFile: string, netConf: NetworkConfig, network: Network, hns: HnsClient, log: Logger): Promise<void> {
  const path = bootRecordPath(subnetFile);
  try {
    const id = (await hns.getNetworkByNameV1(network.networkName))?.ID ?? '';
    recordBootNetwork(path, { name: network.networkName, id, backend: netConf.backend.type });
    const adopted = network.networkName !== netConf.backend.name;
    const fields = { network: network.networkName, id, adopted, configured: netConf.backend.name, path };
    if (adopted) log.warn("pods use the adopted HNS network, not net-conf's name: the CNI config must name it (flanneld cni-config reads it from the boot record)", fields);
    else log.info('the HNS network pods use, recorded for the CNI config', fields);
  } catch (err) {
    log.warn('could not record the HNS network in the boot record; flanneld cni-config falls back to net-conf.json', {
      path,
      network: network.networkName,
      error: errorMessage(err),
    });
  }
}
