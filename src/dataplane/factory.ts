// Chooses the dataplane the agent runs on: the simulated node (src/simulator/, anywhere) or the native
// Windows one (./windows.ts). Each is imported only when chosen. Nothing under src/ but the agent and the
// cleanup command imports this folder; the simulator and the seams it implements never do.
import type { Clock } from '../basics/clock.js';
import type { AgentConfig } from '../config/agent-config.js';
import { errorMessage, UnsupportedError } from '../basics/errors.js';
import type { Metrics } from '../basics/metrics.js';
import type { HnsClient } from '../hns/client.js';
import type { Host } from '../host/host.js';
import type { Logger } from '../basics/log.js';
import type { RouteTable } from '../routes/route-table.js';

export interface Dataplane {
  hns: HnsClient;
  routes: RouteTable;
  host: Host;
}

export interface DataplaneDeps {
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  /** The OS (default process.platform; Wine's node.exe says win32 too). */
  platform?: NodeJS.Platform;
  /** Aborts when the agent stops (the simulated node ends a wait for its state file's lock). */
  signal?: AbortSignal;
}

export async function createDataplane(config: AgentConfig, deps: DataplaneDeps): Promise<Dataplane> {
  if (config.dataplane === 'simulated') return (await import('../simulator/node.js')).createSimulatedNode(config, deps).dataplane;
  const platform = deps.platform ?? process.platform;
  if (platform !== 'win32') {
    // Said before anything is loaded: elsewhere the native dataplane fails on its first DLL, which names a flag that cannot help.
    throw new UnsupportedError(
      'FLANNEL_ERR_UNSUPPORTED',
      `--dataplane windows needs Windows (HNS and iphlpapi.dll), and this is ${platform}; to run the agent here, on a simulated node, pass --dataplane simulated`,
      { dataplane: config.dataplane, platform },
    );
  }
  // Loaded lazily: only the win32 modules import ffi-rs, so nothing native is touched elsewhere.
  let win32: typeof import('./windows.js');
  try {
    win32 = await import('./windows.js');
  } catch (err) {
    throw new UnsupportedError(
      'FLANNEL_ERR_UNSUPPORTED',
      `the native Windows dataplane could not be loaded (${errorMessage(err)}); on Windows install the win32 ffi-rs addon beside flanneld, elsewhere run with --dataplane simulated`,
      { dataplane: config.dataplane },
    );
  }
  return win32.createWin32Dataplane(config, deps);
}
